import { defineCommand } from "citty";
import { firstDifference } from "../../session/compare.ts";
import type { Manifest } from "../../protocol/manifest.ts";
import { inert, inertBlock } from "../../inert.ts";
import { refusalOf } from "../../session/inspect.ts";
import { describeChanges, otherFolderSentence } from "../../session/inspect.ts";
import { describeAsking, describeSettings } from "../_trust-prompt.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import { type CommandResult, indentBlock } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: { name: "describe", description: "What a plugin declares, read from its sidecar: no plugin code runs" },
  args: {
    ...pluginArg,
    live: { type: "boolean", description: "Also load the plugin and compare what it describes with its sidecar" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const inspected = session.inspect(args.plugin);
    const { location, manifest, loadSet, trust } = inspected;
    const readme = loadSet.kept.get("README.md")?.toString("utf8") ?? null;
    const refusal = refusalOf(inspected);
    let live: { manifest: Manifest; matches: boolean; difference: string | null } | null = null;
    if (args.live) {
      const plugin = await session.load(args.plugin);
      const difference = firstDifference(manifest, plugin.manifest);
      live = { manifest: plugin.manifest, matches: difference === null, difference };
    }
    const changes = trust.state === "changed" ? trust.changes : null;
    const trustLine =
      trust.state === "approved" ? "approved" : trust.state === "changed" ? `changed since it was approved (${describeChanges(changes)})` : "not approved";
    const lines = [
      `folder: ${inert(loadSet.realFolder)} (${loadSet.files.length} file${loadSet.files.length === 1 ? "" : "s"})`,
      `hash: ${loadSet.hash}`,
      `trust: ${trustLine}`,
      ...(inspected.approvedElsewhere.length ? [`note: ${otherFolderSentence(manifest.name, inspected.approvedElsewhere, loadSet.realFolder)}`] : []),
      `settings: ${describeSettings(inspected.settings)}`,
      ...(inspected.dependencies.plan?.inSet.length ? [`ships: ${inspected.dependencies.plan.inSet.map((d) => inert(d.path)).join(", ")}`] : []),
      ...(refusal ? [`refused: ${indentBlock(refusal.message, "  ")}`] : []),
    ];
    return {
      json: {
        name: manifest.name,
        library: location.library,
        sidecar: location.sidecar,
        folder: loadSet.realFolder,
        hash: loadSet.hash,
        trust: trust.state,
        changes,
        approvedElsewhere: inspected.approvedElsewhere,
        settings: inspected.settings,
        shadowing: inspected.shadowing,
        ships: inspected.dependencies.plan?.inSet.map((d) => d.path) ?? [],
        refused: refusal?.toJSON() ?? null,
        files: loadSet.files,
        manifest,
        readme,
        live,
      },
      text:
        renderManifest(manifest, location.library) +
        lines.join("\n") + "\n" +
        (readme ? `\n${renderMarkdown(readme)}` : "") +
        (live ? `\nlive: describe ${live.matches ? "matches the sidecar" : `differs: ${inert(live.difference!)}`}\n` : ""),
    };
  },
});

/** The manifest as a person reads it; every string from it is made inert. */
export function renderManifest(m: Manifest, library: string): string {
  const gate = (g: boolean | "dynamic") => (g === "dynamic" ? "asks depending on the arguments" : g ? "asks on every call" : "never asks");
  const lines = [
    `${inert(m.name)} ${inert(m.version)}  (contract ${m.pluginContract})`,
    `library: ${inert(library)}`,
    `spawns processes: ${m.spawns ? "yes" : "no"}   starts work on its own: ${m.client ? "yes" : "no"}`,
    `asks: ${describeAsking(m)}`,
    "",
    `tools (${m.tools.length}):`,
    ...m.tools.map((t) => `  ${inert(t.name)}  — ${t.description ? inert(t.description) : "(no description)"}\n      permission: ${gate(t.gated)}${t.gated !== false && !t.alwaysAskable ? ", never offers Always" : ""}`),
  ];
  if (m.commands.length) lines.push("", `commands (${m.commands.length}):`, ...m.commands.map((c) => `  /${inert(c.name)}  — ${inert(c.summary ?? "")}`));
  if (m.instructions) lines.push("", "instructions for the model:", ...inertBlock(m.instructions).split("\n").map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
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
