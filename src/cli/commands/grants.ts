import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { existsSync } from "node:fs";
import { CxError, isCxError } from "../../errors.ts";
import type { Session } from "../../session/session.ts";
import { readApprovals } from "../../trust/approvals.ts";
import { inert } from "../../inert.ts";
import { didYouMean } from "../../suggest.ts";
import { listGrants, projectScope, revokeGrants } from "../../session/state.ts";
import { addGrant, ruleFor } from "../../trust/grants.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: commandMeta({ name: "grants", description: "List the standing permission grants (Always answers), add one, or revoke one", summary: "List, add or revoke standing permission grants" }),
  args: {
    add: { type: "string", description: "Store a grant in the project folder, as answering Always would: 'plugin calculator tool calc_add'", valueHint: "RULE" },
    revoke: { type: "string", description: "Revoke this rule in the project folder, e.g. 'plugin calculator tool calc_add'", valueHint: "RULE" },
    "all-projects": { type: "boolean", description: "With --revoke: in every project folder, not just this one" },
    plugin: { type: "string", description: "With --add: the plugin's folder or library, where its name alone does not find it", valueHint: "PATH" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    // Grants are stored and compared under the project's real path (symbolic links resolved).
    const project = projectScope(options.cwd);
    if (typeof args.add === "string" && typeof args.revoke === "string") throw new CxError("E_USAGE", "give --add or --revoke, not both");
    if (typeof args.add === "string") {
      if (args["all-projects"]) throw new CxError("E_USAGE", "--all-projects only applies to --revoke: a grant is added in one project folder (--cwd)");
      return await add(args.add, project, options, typeof args.plugin === "string" ? args.plugin : null);
    }
    if (typeof args.plugin === "string") throw new CxError("E_USAGE", "--plugin only applies to --add");
    if (typeof args.revoke === "string") {
      const removed = revokeGrants(args.revoke, args["all-projects"] ? null : project, options);
      return {
        json: { rule: args.revoke, scope: args["all-projects"] ? null : project, revoked: removed },
        text: removed ? `revoked ${removed} grant${removed === 1 ? "" : "s"} of '${inert(args.revoke)}'` : `no grant of '${inert(args.revoke)}' ${args["all-projects"] ? "anywhere" : `in ${inert(project)}`}; nothing to revoke`,
      };
    }
    const grants = listGrants(options);
    const text = grants.length
      ? grants
          .map((g) => `${inert(g.rule)}\n  in ${inert(g.scope)}${g.scope === project ? " (this project)" : ""}, since ${inert(g.grantedAt)}${g.folder === undefined ? "\n  for a plugin of that name in any folder (granted by an older cxagent)" : `\n  for the plugin at ${inert(g.folder)}`}`)
          .join("\n")
      : "no standing grants";
    return { json: { grants }, text };
  },
});

/**
 * Stores what answering Always at a prompt stores: the rule, for the plugin the name finds now (its
 * folder), in this project. Only a tool that asks and offers Always can be granted: a grant answers
 * nothing else (SPEC §7).
 */
async function add(rule: string, project: string, options: ReturnType<typeof globalOptions>, ref: string | null): Promise<CommandResult> {
  const parsed = /^plugin (\S+) tool (\S+)$/.exec(rule.trim());
  if (!parsed) throw new CxError("E_USAGE", `a grant's rule reads 'plugin <plugin> tool <tool>', not '${rule}'`);
  const [, plugin, tool] = parsed as unknown as [string, string, string];
  await using session = await openSession(options);
  const inspected = session.inspect(ref ?? byName(session, plugin));
  if (inspected.name !== plugin) throw new CxError("E_INVALID_INPUT", `the plugin at ${inspected.loadSet.folder} is named '${inspected.name}', not '${plugin}'`);
  const names = inspected.manifest.tools.map((t) => t.name);
  const declared = inspected.manifest.tools.find((t) => t.name === tool);
  if (!declared) {
    throw new CxError("E_UNKNOWN_TOOL", `plugin '${inspected.name}' declares no tool '${tool}'${didYouMean(tool, names)}`, { hint: `its tools: ${names.join(", ") || "none"}` });
  }
  if (declared.gated === false) throw new CxError("E_INVALID_INPUT", `${tool} never asks for permission (gated: false): a grant would answer nothing`);
  if (!declared.alwaysAskable) throw new CxError("E_INVALID_INPUT", `${tool} does not offer Always (alwaysAskable: false): it asks on every call, and a grant would not answer it`);
  const grant = addGrant(session.folders.stateDir, project, ruleFor(inspected.name, tool), inspected.loadSet.realFolder);
  return {
    json: { added: true, ...grant },
    text: `granted '${inert(grant.rule)}' in ${inert(project)} for the plugin at ${inert(grant.folder ?? "")}${inspected.trust.state === "approved" ? "" : " (the plugin itself is not approved yet)"}`,
  };
}

/**
 * The plugin a grant's name means: the one the name finds (config.json, the plugin folders), else
 * the one plugin of that name approved at a folder of its own (approved by its path).
 */
function byName(session: Session, name: string): string {
  try {
    session.locate(name);
    return name;
  } catch (error) {
    if (!isCxError(error, "E_NOT_FOUND")) throw error;
    const folders = [...new Set(readApprovals(session.folders.stateDir).filter((a) => a.plugin === name && existsSync(a.directory)).map((a) => a.directory))];
    if (folders.length === 1) return folders[0]!;
    if (folders.length === 0) throw error;
    throw new CxError("E_INVALID_INPUT", `plugins named '${name}' are approved in ${folders.length} folders: ${folders.join(", ")}`, { hint: "name the one you mean with --plugin <folder>" });
  }
}
