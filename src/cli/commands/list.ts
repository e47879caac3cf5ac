import { defineCommand } from "citty";
import { sandboxWords } from "../../session/sandbox-facts.ts";
import { commandMeta } from "../_meta.ts";
import { hintCommand, shellWord } from "../_hints.ts";
import type { Manifest } from "../../protocol/manifest.ts";
import { collisionsOf } from "../../session/names.ts";
import { isCxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { type Changes, describeChanges, type Inspection, otherFolderSentence, refusalOf } from "../../session/inspect.ts";
import { hiddenBy, ruleText, unmatchedText } from "../../host/tool-policy.ts";
import { profileOf } from "../../kinds/index.ts";
import { globalOptions } from "../_args.ts";
import { type CommandResult, indentBlock } from "../_output.ts";
import { openSession } from "../_session.ts";
import { pluginsFolder } from "../_installed.ts";
import type { CatalogEntry } from "../../discovery/catalog.ts";
import type { Session } from "../../session/session.ts";
import { approvedByPath as approvedOutside } from "../../session/approved-by-path.ts";

export default defineCommand({
  meta: commandMeta({ name: "list", description: "Every configured or discovered plugin, with its trust state (no plugin code runs)", summary: "Discovered, configured, installed and approved plugins, with their trust status" }),
  args: {},
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const entries: (CatalogEntry & { source?: string })[] = session.catalog();
    entries.push(...approvedByPath(session, entries));
    // Each plugin's names against the built-ins and the enabled plugins listed before it, as a session loading them in this order would see them.
    const holders: Manifest[] = [];
    const plugins = entries.map((entry) => {
      let inspected = null;
      let problem = entry.problem;
      if (entry.location) {
        try {
          inspected = session.inspectAt(entry.location);
        } catch (error) {
          // A corrupt state file is no one plugin's problem: it fails the listing, by path.
          if (!isCxError(error) || error.code === "E_STATE") throw error;
          problem = error.message;
        }
      }
      problem ??= inspected ? (refusalOf(inspected)?.message ?? null) : null;
      const tools = inspected?.manifest.tools.map((t) => t.name) ?? [];
      const collisions = inspected ? collisionsOf(inspected.manifest, holders).map((c) => ({ kind: c.kind, name: c.name, tool: c.name, holder: c.holder ?? "built-in" })) : [];
      const enabled = inspected?.enabled ?? ((session.config.plugins.get(entry.name)?.enabled ?? true) && session.project?.plugins.get(entry.name)?.enabled !== false);
      if (inspected && enabled && !inspected.shadowing && collisions.length === 0) holders.push(inspected.manifest);
      const trust = inspected?.trust;
      const installedAt = pluginsFolder(session.folders.configDir) + "/";
      const source = entry.source ?? (entry.configured ? "config" : entry.location?.folder.startsWith(installedAt) ? "installed" : "discovered");
      return {
        name: entry.name,
        source,
        kind: inspected?.kind ?? entry.location?.kind ?? null,
        version: inspected && !(inspected.cortex && !inspected.cortex.versionDeclared) ? inspected.manifest.version : null,
        library: entry.location?.library ?? null,
        folder: inspected?.loadSet.realFolder ?? entry.location?.folder ?? null,
        sharesWith: inspected?.sharesWith ?? [],
        configured: entry.configured,
        enabled,
        trust: trust?.state ?? "unknown",
        changes: trust?.state === "changed" ? trust.changes : null,
        approvedElsewhere: inspected?.approvedElsewhere ?? [],
        shadows: entry.shadows,
        shadowing: inspected?.shadowing ?? null,
        settings: inspected?.settings ?? null,
        ships: inspected?.dependencies.plan?.inSet.map((d) => d.path) ?? [],
        hash: inspected?.loadSet.hash ?? null,
        tools,
        collisions,
        problem,
        sandbox: inspected ? sandboxWords(inspected.sandbox.effective) : null,
        ...selectionJson(inspected),
      };
    });
    const trustWords = (p: (typeof plugins)[number]) =>
      p.trust === "approved" ? "approved" : p.trust === "changed" ? "CHANGED since approval" : p.trust === "new" ? "not approved" : "";
    const text = plugins.length
      ? plugins
          .map((p) => {
            const lines = [`${inert(p.name)} ${p.version === null ? "?" : inert(p.version)}  ${p.enabled ? "" : "[disabled] "}${trustWords(p)}`];
            if (p.source === "approved by path") lines.push("  found    by its approval (not in a plugins folder): load it by its path");
            if (p.library) lines.push(`  library  ${inert(p.library)}`);
            if (p.folder) lines.push(`  folder   ${inert(p.folder)}${p.sharesWith.length ? ` (shared with ${p.sharesWith.map(inert).join(", ")})` : ""}`);
            if (p.trust === "changed") lines.push(`  changed  ${describeChanges(p.changes as Changes | null)}`);
            if (p.approvedElsewhere.length && p.folder) lines.push(`  note     ${otherFolderSentence(p.name, p.approvedElsewhere, p.folder)}`);
            for (const folder of p.shadows) lines.push(`  shadows  another plugin named ${inert(p.name)} at ${inert(folder)}, which loads only by its path`);
            if (p.ships.length) lines.push(`  ships    ${p.ships.map(inert).join(", ")}`);
            if (p.tools.length) lines.push(`  tools    ${p.tools.map(inert).join(", ")}`);
            const note = p.kind === null ? null : profileOf(p.kind).words.listNote;
            if (note) lines.push(`  kind     ${note}`);
            lines.push(...selectionLines(p));
            if (p.sandbox) lines.push(`  touches  ${inert(p.sandbox)}`);
            for (const c of p.collisions) lines.push(`  collides ${c.kind} '${inert(c.name)}' is already held by ${c.holder === "built-in" ? "a built-in tool" : `plugin '${inert(c.holder)}'`}`);
            if (p.problem) lines.push(`  problem  ${indentBlock(p.problem, "           ")}`);
            return lines.join("\n");
          })
          .join("\n\n")
      : `no plugins found; searched ${session.searchFolders.map((f) => inert(f.path)).join(", ")}`;
    return { json: { plugins, searched: session.searchFolders.map((f) => f.path) }, text };
  },
});

/**
 * Plugins approved at a folder no search folder reaches (approved by their path: `approve
 * examples/calculator`): listed too, so that every approval shows up beside its plugin. One whose
 * folder is gone is listed with that problem.
 */
function approvedByPath(session: Session, listed: readonly CatalogEntry[]): (CatalogEntry & { source: string })[] {
  return approvedOutside(session.folders.stateDir, listed, (r) => session.locate(r)).map((a) => ({
    name: a.name,
    configured: false,
    location: a.location,
    problem: a.gone ? `its folder ${a.directory} is gone; '${hintCommand(`revoke ${shellWord(a.name)} --all-folders`)}' withdraws its approvals` : a.problem,
    shadows: [],
    source: "approved by path",
  }));
}

// --- tool selection (issue 20): who disabled a plugin, which tools are hidden or ask, which patterns match nothing ---

type Selected = ReturnType<typeof selectionJson>;

function selectionJson(inspected: Inspection | null) {
  const policy = inspected?.selection.policy;
  return {
    disabledBy: inspected ? [inspected.disabled.user, inspected.disabled.project].filter((d) => d !== null) : [],
    hidden: policy ? [...policy.hidden].map(([tool, by]) => ({ tool, ...by })) : [],
    asked: policy ? [...policy.asked].map(([tool, by]) => ({ tool, ...by })) : [],
    unmatched: policy?.unmatched ?? [],
  };
}

function selectionLines(p: Selected & { name: string }): string[] {
  return [
    ...p.disabledBy.map((d) => `  disabled by ${inert(ruleText(d))}`),
    ...p.hidden.map((h) => `  hidden   ${inert(h.tool)} ${inert(hiddenBy(h))}`),
    ...p.asked.map((a) => `  asks     ${inert(a.tool)} on every call, because of ${inert(ruleText(a))}`),
    ...p.unmatched.map((u) => `  warning  ${inert(unmatchedText(p.name, u))}`),
  ];
}
