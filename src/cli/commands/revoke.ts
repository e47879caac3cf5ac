import { defineCommand } from "citty";
import { isCxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { readApprovals, revokeApproval } from "../../trust/approvals.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: { name: "revoke", description: "Withdraw a plugin's approval; it asks again at its next load" },
  args: {
    ...pluginArg,
    "all-folders": { type: "boolean", description: "Withdraw the approvals of every plugin of that name, in every folder" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const stateDir = session.folders.stateDir;
    // The plugin the reference names, at its folder; by name alone once its files are gone.
    let name = args.plugin;
    let folder: string | null = null;
    if (!args["all-folders"]) {
      try {
        const inspected = session.inspect(args.plugin);
        name = inspected.name;
        folder = inspected.loadSet.realFolder;
      } catch (error) {
        if (!isCxError(error) || !readApprovals(stateDir).some((a) => a.plugin === args.plugin)) throw error;
      }
    }
    const removed = revokeApproval(stateDir, name, folder);
    const where = folder === null ? "" : ` at ${inert(folder)}`;
    return {
      json: { plugin: name, revoked: removed.length > 0, folders: removed },
      text: removed.length
        ? `revoked the approval of ${inert(name)}${removed.length === 1 ? ` at ${inert(removed[0]!)}` : ` in ${removed.length} folders: ${removed.map(inert).join(", ")}`}`
        : `${inert(name)} was not approved${where}; nothing to revoke`,
    };
  },
});
