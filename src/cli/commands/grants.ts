import { defineCommand } from "citty";
import { resolve } from "node:path";
import { resolveFolders } from "../../discovery/paths.ts";
import { readGrants, revokeGrant } from "../../trust/grants.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: { name: "grants", description: "List the standing permission grants (Always answers), or revoke one" },
  args: {
    revoke: { type: "string", description: "Revoke this rule in the project folder, e.g. 'plugin calculator tool calc_add'", valueHint: "RULE" },
    "all-projects": { type: "boolean", description: "With --revoke: in every project folder, not just this one" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const { stateDir } = resolveFolders(options);
    const project = resolve(options.cwd);
    if (typeof args.revoke === "string") {
      const removed = revokeGrant(stateDir, args.revoke, args["all-projects"] ? null : project);
      return {
        json: { rule: args.revoke, scope: args["all-projects"] ? null : project, revoked: removed },
        text: removed ? `revoked ${removed} grant${removed === 1 ? "" : "s"} of '${args.revoke}'` : `no grant of '${args.revoke}' ${args["all-projects"] ? "anywhere" : `in ${project}`}; nothing to revoke`,
      };
    }
    const grants = readGrants(stateDir);
    const text = grants.length
      ? grants.map((g) => `${g.rule}\n  in ${g.scope}${g.scope === project ? " (this project)" : ""}, since ${g.grantedAt}`).join("\n")
      : "no standing grants";
    return { json: { grants }, text };
  },
});
