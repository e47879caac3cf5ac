import { defineCommand } from "citty";
import { isCxError } from "../../errors.ts";
import { readSidecar } from "../../discovery/sidecar.ts";
import { readApprovals, revokeApproval } from "../../trust/approvals.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: { name: "revoke", description: "Withdraw a plugin's approval; it asks again at its next load" },
  args: { ...pluginArg },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const stateDir = session.folders.stateDir;
    // A plugin's approval can be revoked by name even after its files are gone.
    let name = args.plugin;
    if (!readApprovals(stateDir).some((a) => a.plugin === name)) {
      try {
        const location = session.locate(args.plugin);
        name = readSidecar(location.sidecar, location.library).name;
      } catch (error) {
        if (!isCxError(error, "E_NOT_FOUND")) throw error;
      }
    }
    const removed = revokeApproval(stateDir, name);
    return {
      json: { plugin: name, revoked: removed > 0 },
      text: removed ? `revoked the approval of ${name}` : `${name} was not approved; nothing to revoke`,
    };
  },
});
