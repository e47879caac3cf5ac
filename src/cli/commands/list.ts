import { defineCommand } from "citty";
import { catalog } from "../../discovery/catalog.ts";
import { BUILTIN_TOOLS } from "../../host/session.ts";
import { readApprovals, trustState } from "../../trust/approvals.ts";
import { loadSetHash } from "../../trust/hash.ts";
import { isCxError } from "../../errors.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";
import { sharersOf } from "../../trust/check.ts";

export default defineCommand({
  meta: { name: "list", description: "Every configured or discovered plugin, with its trust state (no plugin code runs)" },
  args: {},
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const approvals = readApprovals(session.folders.stateDir);
    const entries = catalog(session.config, session.searchFolders);
    const holders = new Map<string, string>(BUILTIN_TOOLS.map((t) => [t, "built-in"]));
    const plugins = entries.map((entry) => {
      let hash: string | null = null;
      let trust: string = "unknown";
      let sharesWith: string[] = [];
      let problem = entry.problem;
      if (entry.location && entry.manifest) {
        try {
          const loadSet = loadSetHash(entry.location.folder);
          hash = loadSet.hash;
          trust = trustState(approvals, entry.manifest.name, loadSet.hash);
          sharesWith = sharersOf(loadSet.files, entry.location.library);
        } catch (error) {
          problem = isCxError(error) ? error.message : String(error);
        }
      }
      const tools = entry.manifest?.tools.map((t) => t.name) ?? [];
      const collisions = tools.filter((t) => holders.has(t)).map((tool) => ({ tool, holder: holders.get(tool)! }));
      if (entry.enabled) for (const t of tools) if (!holders.has(t)) holders.set(t, entry.name);
      return {
        name: entry.name,
        version: entry.manifest?.version ?? null,
        library: entry.location?.library ?? null,
        folder: entry.location?.folder ?? null,
        sharesWith,
        configured: entry.configured,
        enabled: entry.enabled,
        trust,
        hash,
        tools,
        collisions,
        problem,
      };
    });
    const text = plugins.length
      ? plugins
          .map((p) => {
            const lines = [`${p.name} ${p.version ?? "?"}  ${p.enabled ? "" : "[disabled] "}${p.trust === "approved" ? "approved" : p.trust === "changed" ? "CHANGED since approval" : p.trust === "new" ? "not approved" : ""}`];
            if (p.library) lines.push(`  library  ${p.library}`);
            if (p.folder) lines.push(`  folder   ${p.folder}${p.sharesWith.length ? ` (shared with ${p.sharesWith.join(", ")})` : ""}`);
            if (p.tools.length) lines.push(`  tools    ${p.tools.join(", ")}`);
            for (const c of p.collisions) lines.push(`  collides tool '${c.tool}' is already held by ${c.holder === "built-in" ? "a built-in tool" : `plugin '${c.holder}'`}`);
            if (p.problem) lines.push(`  problem  ${p.problem}`);
            return lines.join("\n");
          })
          .join("\n\n")
      : `no plugins found; searched ${session.searchFolders.map((f) => f.path).join(", ")}`;
    return { json: { plugins, searched: session.searchFolders.map((f) => f.path) }, text };
  },
});
