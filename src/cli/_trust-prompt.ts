/**
 * The trust prompt on a terminal (SPEC §6.3): what a person is shown before any plugin byte runs,
 * every string from the plugin or its folder made inert, and the question, default No (Ctrl-C
 * interrupts: exit 130, nothing approved). The library never asks by itself: the CLI passes this as its ConfirmTrust.
 */
import { sandboxWords } from "../session/sandbox-facts.ts";
import { inert } from "../inert.ts";
import type { Manifest } from "../protocol/manifest.ts";
import { join } from "node:path";
import type { ConfirmTrust, TrustRequest } from "../index.ts";
import { describeChanges, otherFolderSentence } from "../session/inspect.ts";
import { hintCommand, shellWord } from "./_hints.ts";
import { choose } from "./_prompt.ts";
import { err } from "./_stdio.ts";

/**
 * The trust prompt, for a session whose approvals live in `stateDir`. A yes is recorded there by
 * the library once this returns; the prompt says what and where, so the person knows it lasts.
 */
export function trustPrompt(stateDir: string): ConfirmTrust {
  return async (request) => {
    err(`${describeTrustRequest(request)}\n`);
    const answer = await choose("Approve these exact files?", [
      { key: "y", label: "yes", value: "yes" },
      { key: "n", label: "no", value: "no" },
    ], "no");
    if (answer === "yes") {
      err(`approved: ${inert(request.manifest.name)} ${inert(request.manifest.version)} at ${inert(request.realFolder)} (hash ${request.hash.slice(0, 12)}…), stored in ${join(stateDir, "approvals.json")}; '${hintCommand(`revoke ${shellWord(request.realFolder)}`)}' withdraws it\n`);
    }
    return answer === "yes";
  };
}

/** Which tools ask, and how: "every call: a, b; depending on its arguments: c". */
export function describeAsking(manifest: Manifest): string {
  const always = manifest.tools.filter((t) => t.gated === true).map((t) => t.name);
  const dynamic = manifest.tools.filter((t) => t.gated === "dynamic").map((t) => t.name);
  const parts = [
    ...(always.length ? [`on every call: ${always.join(", ")}`] : []),
    ...(dynamic.length ? [`depending on the arguments: ${dynamic.join(", ")}`] : []),
  ];
  return parts.length ? parts.join("; ") : "never";
}

export function describeSettings(settings: TrustRequest["settings"]): string {
  if (!settings) return "none (config.json has no entry for it)";
  const keys = settings.keys.length ? `keys: ${settings.keys.map(inert).join(", ")}` : "no keys";
  return `those of config.json entry '${inert(settings.entry)}' (${keys})`;
}

/** The approval prompt's text (SPEC §6.3). */
export function describeTrustRequest(request: TrustRequest): string {
  const m = request.manifest;
  const name = inert(m.name);
  const version = inert(m.version);
  const cortex = request.cortex;
  const lines = [
    request.state === "changed" ? `Plugin ${name} ${version} changed since you approved it.` : `Plugin ${name} ${version} has not been approved yet.`,
    ...(cortex ? cortexLines(cortex) : []),
    ...(request.process ? processLines(request.process) : []),
    `  folder        ${inert(request.realFolder)}  (every file in it is covered)`,
    `  hash          ${request.hash}`,
    ...(request.state === "changed" ? [`  changed       ${describeChanges(request.changes)}`] : []),
    ...(request.approvedElsewhere.length ? [`  elsewhere     ${otherFolderSentence(m.name, request.approvedElsewhere, request.realFolder)}`] : []),
    ...(cortex
      ? [
          "  tools         declared only by its running code, so none can be shown before it runs;",
          "                once approved, `describe --live` lists them",
          "  asks          a tool asks on every call when it declares an effect whose confirmation is",
          "                \"on_risk\" or \"always\" (\"always\": never offers Always)",
        ]
      : [`  tools         ${m.tools.length}${m.tools.length ? `: ${m.tools.map((t) => inert(t.name)).join(", ")}` : ""}`, `  asks          ${describeAsking(m)}`, ...claimLines(m)]),
    `  instructions  ${m.instructions ? "adds instructions for the model" : "none"}`,
    `  processes     ${cortex ? "not declared by Cortex plugins; what it starts ends with its plugin host" : m.spawns ? "starts processes of its own" : "starts none"}`,
    `  secrets       ${describeSecrets(m)}`,
    `  on its own    ${m.client ? "can start work by itself (client)" : "only acts when called"}`,
    `  settings      ${cortex ? "none (a Cortex plugin takes no settings)" : describeSettings(request.settings)}`,
    ...(request.ships.length ? [`  ships         ${request.ships.map(inert).join(", ")} (loaded from the approved copies)`] : []),
    `  shares folder ${request.sharesWith.length ? `with ${request.sharesWith.map(inert).join(", ")}` : "with no other plugin"}`,
    `  may touch     ${inert(sandboxWords(m.sandbox ?? null))}`,
    m.sandbox ? "Loading it runs its code with your permissions, confined by the kernel to what it may touch." : "Loading it runs its code with your permissions.",
  ];
  return lines.join("\n");
}

/** What a Cortex process plugin runs: each tool's command, and every path outside its folder by name. */
function processLines(process: NonNullable<TrustRequest["process"]>): string[] {
  const outside = process.runs.flatMap((r) => r.outside.map((p) => `${inert(p)} (tool ${inert(r.tool)})`));
  return [
    `  kind          Cortex process plugin (${inert(process.manifest)}): each call runs its tool's command`,
    ...process.runs.map((r, i) => `${i === 0 ? "  runs          " : "                "}${inert(r.tool)}: ${[r.command, ...r.args].map((a) => inert(JSON.stringify(a))).join(" ")}`),
    ...(outside.length ? [`  outside       runs from outside its folder (allow_host_paths): ${outside.join(", ")}`] : []),
  ];
}

/** "may ask for: github.token — its description; …", each string inert. */
export function describeSecrets(manifest: Manifest): string {
  const secrets = manifest.secrets ?? [];
  if (!secrets.length) return "asks for none";
  return `may ask for: ${secrets.map((s) => (s.description ? `${inert(s.name)} — ${inert(s.description)}` : inert(s.name))).join("; ")}`;
}

/** What a Cortex plugin is, and where what is shown of it comes from. */
function cortexLines(cortex: NonNullable<TrustRequest["cortex"]>): string[] {
  const from = cortex.manifest ? `name and version from ${inert(cortex.manifest)}` : "no manifest.toml: named after its library's file";
  return [
    `  kind          Cortex native plugin (cortex_plugin_init); ${from}`,
    ...(cortex.description ? [`  about         ${inert(cortex.description)}`] : []),
    // plugin_info is the running code's: unknown before approval, so only what a difference means.
    ...(cortex.manifest ? ["  name          the manifest's; a plugin_info naming it otherwise is warned about once it runs, not refused"] : []),
  ];
}

/**
 * What the plugin claims of its tools (issue 42: title, annotations, outputSchema): shown as its
 * claims, since cxagent enforces none of them but the outputSchema (checked on every result).
 */
function claimLines(m: Manifest): string[] {
  const claimed = m.tools.filter((t) => t.annotations && Object.keys(t.annotations).length);
  const typed = m.tools.filter((t) => t.outputSchema).map((t) => inert(t.name));
  return [
    ...claimed.map((t, i) => `${i === 0 ? "  claims        " : "                "}${inert(t.name)}: ${Object.entries(t.annotations!).map(([k, v]) => `${k.replace(/Hint$/, "")} ${v ? "yes" : "no"}`).join(", ")} (the plugin's word, not enforced)`),
    ...(typed.length ? [`  output        ${typed.join(", ")} declare the shape of their output (checked on every result)`] : []),
  ];
}
