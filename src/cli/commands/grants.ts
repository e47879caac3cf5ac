import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { inert } from "../../inert.ts";
import { listGrants, projectScope, revokeGrants } from "../../session/state.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: commandMeta({ name: "grants", description: "List the standing permission grants (Always answers), or revoke one", summary: "List or revoke standing permission grants" }),
  args: {
    revoke: { type: "string", description: "Revoke this rule in the project folder, e.g. 'plugin calculator tool calc_add'", valueHint: "RULE" },
    "all-projects": { type: "boolean", description: "With --revoke: in every project folder, not just this one" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    // Grants are stored and compared under the project's real path (symbolic links resolved).
    const project = projectScope(options.cwd);
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
