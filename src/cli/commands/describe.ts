import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readSidecar } from "../../discovery/sidecar.ts";
import { firstDifference } from "../../protocol/compare.ts";
import type { Manifest } from "../../protocol/manifest.ts";
import { readApprovals, trustState } from "../../trust/approvals.ts";
import { loadSetHash } from "../../trust/hash.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
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
    const location = session.locate(args.plugin);
    const manifest = readSidecar(location.sidecar, location.library);
    const { hash, files } = loadSetHash(location.folder);
    const trust = trustState(readApprovals(session.folders.stateDir), manifest.name, hash);
    const readmePath = join(location.folder, "README.md");
    const readme = existsSync(readmePath) ? readFileSync(readmePath, "utf8") : null;
    let live: { manifest: Manifest; matches: boolean; difference: string | null } | null = null;
    if (args.live) {
      const plugin = await session.load(args.plugin);
      const difference = firstDifference(manifest, plugin.manifest);
      live = { manifest: plugin.manifest, matches: difference === null, difference };
    }
    return {
      json: { name: manifest.name, library: location.library, sidecar: location.sidecar, folder: location.folder, hash, trust, files, manifest, readme, live },
      text:
        renderManifest(manifest, location.library) +
        `folder: ${location.folder} (${files.length} file${files.length === 1 ? "" : "s"})\nhash: ${hash}\ntrust: ${trust === "approved" ? "approved" : trust === "changed" ? "changed since it was approved" : "not approved"}\n` + (readme ? `\n${renderMarkdown(readme)}` : "") + (live ? `\nlive: describe ${live.matches ? "matches the sidecar" : `differs: ${live.difference}`}\n` : ""),
    };
  },
});

export function renderManifest(m: Manifest, library: string): string {
  const gate = (g: boolean | "dynamic") => (g === "dynamic" ? "asks depending on the arguments" : g ? "asks every call" : "never asks");
  const lines = [
    `${m.name} ${m.version}  (contract ${m.pluginContract})`,
    `library: ${library}`,
    `spawns processes: ${m.spawns ? "yes" : "no"}   starts work on its own: ${m.client ? "yes" : "no"}`,
    "",
    `tools (${m.tools.length}):`,
    ...m.tools.map((t) => `  ${t.name}  — ${t.description || "(no description)"}\n      permission: ${gate(t.gated)}${t.gated !== false && !t.alwaysAskable ? ", never offers Always" : ""}`),
  ];
  if (m.commands.length) lines.push("", `commands (${m.commands.length}):`, ...m.commands.map((c) => `  /${c.name}  — ${c.summary ?? ""}`));
  if (m.instructions) lines.push("", "instructions for the model:", ...m.instructions.split("\n").map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

/** A light terminal rendering of a README: headings underlined, code fenced by indentation. */
export function renderMarkdown(markdown: string): string {
  const out: string[] = [];
  let inCode = false;
  for (const line of markdown.split("\n")) {
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
