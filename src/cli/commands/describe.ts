import { defineCommand } from "citty";
import { sandboxReport } from "../../session/sandbox-facts.ts";
import { commandMeta } from "../_meta.ts";
import { firstDifference } from "../../session/compare.ts";
import { join } from "node:path";
import type { Manifest, Tool } from "../../protocol/manifest.ts";
import { type KindProfile, profileOf } from "../../kinds/index.ts";
import { inert, inertBlock } from "../../inert.ts";
import { describeChanges, type Inspection, otherFolderSentence, refusalOf } from "../../session/inspect.ts";
import { COST_ESTIMATE, contextCost } from "../../session/selection.ts";
import { askedBecause, hiddenBecause, ruleText, unmatchedText } from "../../host/tool-policy.ts";
import { describeAsking, describeSecrets, describeSettings } from "../_trust-prompt.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import { type CommandResult, indentBlock } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: commandMeta({ name: "describe", description: "What a plugin declares, read from its sidecar: no plugin code runs", summary: "What a plugin declares and its tools' arguments (no plugin code runs); --live loads it and compares" }),
  args: {
    ...pluginArg,
    live: { type: "boolean", description: "Also load the plugin and compare what it describes with its sidecar" },
    readme: { type: "boolean", description: "Print the plugin's whole README.md, rendered for a terminal (default: its first paragraph)" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const inspected = session.inspect(args.plugin);
    const { location, manifest, loadSet, trust } = inspected;
    const readme = loadSet.kept.get("README.md")?.toString("utf8") ?? null;
    const refusal = refusalOf(inspected);
    const sandbox = sandboxReport(inspected.sandbox);
    let live: { manifest: Manifest; matches: boolean; difference: string | null; deadlines?: { tool: string; ms: number }[]; about?: string | null; warnings?: readonly string[] } | null = null;
    if (args.live) {
      const plugin = await session.load(args.plugin);
      if (inspected.cortex) {
        // No sidecar to compare with: what a Cortex plugin declares when it runs is what it runs with.
        const deadlines = plugin.manifest.tools.flatMap((t) => (plugin.deadlineOf(t.name) === null ? [] : [{ tool: t.name, ms: plugin.deadlineOf(t.name)! }]));
        live = { manifest: plugin.manifest, matches: true, difference: null, deadlines, about: plugin.about, warnings: plugin.warnings };
      } else {
        const difference = firstDifference(manifest, plugin.manifest);
        live = { manifest: plugin.manifest, matches: difference === null, difference };
      }
    }
    const changes = trust.state === "changed" ? trust.changes : null;
    const trustLine =
      trust.state === "approved" ? "approved" : trust.state === "changed" ? `changed since it was approved (${describeChanges(changes)})` : "not approved";
    const lines = [
      `folder: ${inert(loadSet.realFolder)} (${loadSet.files.length} file${loadSet.files.length === 1 ? "" : "s"})`,
      `hash: ${loadSet.hash}`,
      `trust: ${trustLine}`,
      ...(inspected.approvedElsewhere.length ? [`note: ${otherFolderSentence(manifest.name, inspected.approvedElsewhere, loadSet.realFolder)}`] : []),
      `settings: ${inspected.cortex ? "none (a Cortex plugin takes no settings)" : describeSettings(inspected.settings)}`,
      ...(inspected.dependencies.plan?.inSet.length ? [`ships: ${inspected.dependencies.plan.inSet.map((d) => inert(d.path)).join(", ")}`] : []),
      `may touch: ${inert(sandbox.words)}`,
      ...(sandbox.layers ? [`enforced by: ${sandbox.layers.join("+")}`] : []),
      ...narrowedLines(sandbox.narrowedBy),
      ...(refusal ? [`refused: ${indentBlock(refusal.message, "  ")}`] : []),
    ];
    return {
      json: {
        name: manifest.name,
        kind: inspected.kind,
        cortex: inspected.cortex,
        library: location.library,
        sidecar: inspected.cortex ? null : location.sidecar,
        folder: loadSet.realFolder,
        hash: loadSet.hash,
        trust: trust.state,
        changes,
        approvedElsewhere: inspected.approvedElsewhere,
        settings: inspected.settings,
        shadowing: inspected.shadowing,
        ships: inspected.dependencies.plan?.inSet.map((d) => d.path) ?? [],
        refused: refusal?.toJSON() ?? null,
        sandbox,
        files: loadSet.files,
        manifest,
        readme,
        live,
        ...selectionJson(inspected),
      },
      text:
        (inspected.cortex ? renderCortex(inspected) : renderManifest(manifest, location.library, inspected.profile)) +
        lines.join("\n") + "\n" +
        selectionLines(inspected).map((l) => l + "\n").join("") +
        (readme ? `\n${args.readme ? renderMarkdown(readme) : readmeSummary(readme, join(loadSet.realFolder, "README.md"))}\n` : "") +
        (live && inspected.cortex ? `\nlive: ${renderLive(live)}` : "") +
        (live && !inspected.cortex ? `\nlive: describe ${live.matches ? "matches the sidecar" : `differs: ${inert(live.difference!)}`}\n` : ""),
    };
  },
});

/** The manifest as a person reads it; every string from it is made inert. */
export function renderManifest(m: Manifest, library: string, profile: KindProfile = profileOf(undefined)): string {
  const gate = (g: boolean | "dynamic") => (g === "dynamic" ? "asks depending on the arguments" : g ? "asks on every call" : "never asks");
  const lines = [
    `${inert(m.name)} ${inert(m.version)}  (contract ${m.pluginContract})`,
    profile.words.source(inert(library)),
    `spawns processes: ${m.spawns ? "yes" : "no"}   starts work on its own: ${m.client ? "yes" : "no"}`,
    `asks: ${describeAsking(m)}`,
    "",
    `tools (${m.tools.length}):`,
    ...m.tools.map((t) => `  ${inert(t.name)}  — ${t.description ? inert(t.description) : "(no description)"}\n      permission: ${gate(t.gated)}${t.gated !== false && !t.alwaysAskable ? ", never offers Always" : ""}\n${renderArguments(t)}`),
  ];
  if (m.commands.length) lines.push("", `commands (${m.commands.length}):`, ...m.commands.map((c) => `  /${inert(c.name)}  — ${inert(c.summary ?? "")}`));
  if (m.secrets?.length) lines.push("", `secrets: ${describeSecrets(m)} (cxagent secrets ${inert(m.name)}: what each is bound to)`);
  if (m.instructions) lines.push("", "instructions for the model:", ...inertBlock(m.instructions).split("\n").map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

/**
 * A tool's arguments from its inputSchema, one line each: name, type, whether it is required, and
 * its description — what to pass with --args, without reading the schema.
 */
export function renderArguments(tool: Tool): string {
  const schema = tool.inputSchema;
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
  const names = Object.keys(properties);
  if (names.length === 0) return "      arguments: none";
  const rows = names.map((name) => {
    const p = isObject(properties[name]) ? properties[name] : {};
    const description = typeof p.description === "string" ? `  ${inert(p.description)}` : "";
    return [inert(name), typeOf(p), required.has(name) ? "required" : "optional", description] as const;
  });
  const width = (i: 0 | 1 | 2) => Math.max(...rows.map((r) => r[i].length));
  return rows
    .map((r, i) => `      ${i === 0 ? "arguments:" : "          "} ${r[0].padEnd(width(0))}  ${r[1].padEnd(width(1))}  ${r[2].padEnd(width(2))}${r[3]}`.trimEnd())
    .join("\n");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** "number", "string|null", "array of string", "one of now, later". */
function typeOf(p: Record<string, unknown>): string {
  if (Array.isArray(p.enum)) return inert(`one of ${p.enum.map((e) => (typeof e === "string" ? e : JSON.stringify(e))).join(", ")}`);
  const type = Array.isArray(p.type) ? p.type.join("|") : typeof p.type === "string" ? p.type : "any";
  if (type === "array" && isObject(p.items) && typeof p.items.type === "string") return inert(`array of ${p.items.type}`);
  return inert(type);
}

/** The README's first paragraph (past its title), and where the rest is. */
export function readmeSummary(markdown: string, path: string): string {
  const lines = inertBlock(markdown).split("\n");
  const paragraph: string[] = [];
  let inCode = false;
  for (const line of lines) {
    if (line.startsWith("```")) inCode = !inCode;
    if (inCode || line.startsWith("```")) {
      if (paragraph.length) break;
      continue;
    }
    if (/^\s*$/.test(line) || /^#{1,6}\s/.test(line)) {
      if (paragraph.length) break;
      continue;
    }
    paragraph.push(line.replace(/\*\*(.+?)\*\*/g, "$1").replace(/`([^`]+)`/g, "$1"));
  }
  const count = lines.length - (lines.at(-1) === "" ? 1 : 0);
  return `${paragraph.length ? `${paragraph.join("\n")}\n\n` : ""}README: ${inert(path)} (${count} lines; --readme prints it whole)`;
}

// --- Cortex native plugins (issue 17): what is known before they run, and what they declare when they do ---

/** A Cortex plugin before it runs: its tools are declared only by its running code. */
function renderCortex(inspected: Inspection): string {
  const { manifest: m, cortex, location } = inspected;
  const lines = [
    `${inert(m.name)} ${inert(m.version)}  (Cortex native plugin, cortex_plugin_init)`,
    `library: ${inert(location.library)}`,
    `manifest: ${cortex!.manifest ? inert(cortex!.manifest) : "none (no manifest.toml: named after its library's file)"}`,
    ...(cortex!.description ? [`about: ${inert(cortex!.description)}`] : []),
    inspected.trust.state === "approved"
      ? `tools: declared only by its running code; describe --live lists them`
      : "tools: declared only by its running code; once it is approved, describe --live lists them",
  ];
  return lines.join("\n") + "\n";
}

/** What a running Cortex plugin declares: its tools, how each asks, its default deadlines. */
function renderLive(live: { manifest: Manifest; deadlines?: { tool: string; ms: number }[]; about?: string | null; warnings?: readonly string[] }): string {
  const gate = (g: boolean | "dynamic", always: boolean) => (g === true ? `asks on every call (an effect it declares needs confirmation)${always ? "" : ", never offers Always"}` : "never asks");
  const deadline = (tool: string) => {
    const d = live.deadlines?.find((x) => x.tool === tool);
    return d ? `; default deadline ${d.ms / 1000} s (its timeout_secs)` : "";
  };
  const m = live.manifest;
  return [
    `the running plugin is ${inert(m.name)} ${inert(m.version)}${live.about ? ` — ${inert(live.about)}` : ""}, with ${m.tools.length} tool${m.tools.length === 1 ? "" : "s"}:`,
    ...m.tools.map((t) => `  ${inert(t.name)}  — ${t.description ? inert(t.description) : "(no description)"}\n      permission: ${gate(t.gated, t.alwaysAskable)}${deadline(t.name)}`),
    ...(live.warnings ?? []).map((w) => `warning: ${inert(w)}`),
  ].join("\n") + "\n";
}

/** A light terminal rendering of a README (inert): headings underlined, code fenced by indentation. */
export function renderMarkdown(markdown: string): string {
  const out: string[] = [];
  let inCode = false;
  for (const line of inertBlock(markdown).split("\n")) {
    if (line.startsWith("```")) {
      inCode = !inCode;
      continue;
    }
    if (inCode) {
      out.push(`    ${line}`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const text = heading[2]!;
      out.push(text, (heading[1]!.length === 1 ? "=" : "-").repeat(Math.min(text.length, 80)));
      continue;
    }
    out.push(line.replace(/\*\*(.+?)\*\*/g, "$1").replace(/`([^`]+)`/g, "$1"));
  }
  return out.join("\n");
}

// --- tool selection and context cost (issue 20): per tool, whether the model sees it, why not, and what it costs ---

function selectionJson(inspected: Inspection) {
  const { manifest, disabled } = inspected;
  const { policy } = inspected.selection;
  const tools = manifest.tools.map((t) => ({
    name: t.name,
    ...contextCost(t),
    visible: !policy.hidden.has(t.name),
    hiddenBy: policy.hidden.get(t.name) ?? null,
    askedBy: policy.asked.get(t.name) ?? null,
  }));
  const sum = (list: typeof tools) => list.reduce((n, t) => n + t.tokens, 0);
  const visible = tools.filter((t) => t.visible);
  const instructions = manifest.instructions ? Math.ceil(Buffer.byteLength(manifest.instructions, "utf8") / 4) : 0;
  return {
    disabledBy: [disabled.user, disabled.project].filter((d) => d !== null),
    unmatched: policy.unmatched,
    context: {
      estimate: COST_ESTIMATE,
      tools,
      visibleTokens: sum(visible),
      hiddenTokens: sum(tools) - sum(visible),
      // Instructions join the model's context only while one of the plugin's tools is visible (or it has none).
      instructionsTokens: visible.length || !tools.length ? instructions : 0,
      invokeTimeout: policy.invokeTimeout,
      gateTimeout: policy.gateTimeout,
    },
  };
}

function selectionLines(inspected: Inspection): string[] {
  const { disabledBy, unmatched, context } = selectionJson(inspected);
  if (!context.tools.length && !disabledBy.length) return [];
  const width = Math.max(0, ...context.tools.map((t) => inert(t.name).length));
  const cost = (n: number) => `~${n} token${n === 1 ? "" : "s"}`;
  const lines = [
    "",
    `in the model's context (${COST_ESTIMATE}):`,
    ...context.tools.map((t) => {
      const why = t.hiddenBy ? `  ${hiddenBecause(t.hiddenBy)}` : t.askedBy ? `  ${askedBecause(t.askedBy)}` : "";
      return `  ${inert(t.name).padEnd(width)}  ${cost(t.tokens).padStart(12)}${inert(why)}`;
    }),
  ];
  const shown = context.tools.filter((t) => t.visible).length;
  let total = `  total: ${cost(context.visibleTokens)} for ${shown} of ${context.tools.length} tool${context.tools.length === 1 ? "" : "s"}`;
  if (context.instructionsTokens) total += `, plus ${cost(context.instructionsTokens)} of instructions`;
  if (context.hiddenTokens) total += `; hiding saves ${cost(context.hiddenTokens)}`;
  if (context.tools.length) lines.push(total);
  for (const limit of [context.invokeTimeout && { what: "each call", ...context.invokeTimeout }, context.gateTimeout && { what: "its gate", ...context.gateTimeout }]) {
    if (limit) lines.push(`  limit: ${limit.what} may take at most ${limit.ms} ms (${inert(ruleText(limit.by))})`);
  }
  for (const d of disabledBy) lines.push(`  disabled by ${inert(ruleText(d))}`);
  for (const u of unmatched) lines.push(`  warning: ${inert(unmatchedText(inspected.name, u))}`);
  return lines;
}

/** Where each narrowing of the sandbox came from: `narrowed: fs.write, memoryMiB by <file>`, one line per file. */
function narrowedLines(narrowedBy: readonly { key: string; by: string; file: string }[]): string[] {
  const byFile = new Map<string, string[]>();
  for (const n of narrowedBy) byFile.set(n.file, [...(byFile.get(n.file) ?? []), n.key]);
  return [...byFile].map(([file, keys]) => `narrowed: ${keys.join(", ")} by ${inert(file)}`);
}
