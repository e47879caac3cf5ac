import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { inert } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: commandMeta({ name: "revoke", description: "Withdraw a plugin's approval; it asks again at its next load", summary: "Withdraw a plugin's approval" }),
  args: {
    ...pluginArg,
    "all-folders": { type: "boolean", description: "Withdraw the approvals of every plugin of that name, in every folder" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    // The plugin the reference names, at its folder; by name alone once its files are gone.
    const { plugin: name, folder, folders: removed } = session.revoke(args.plugin, { allFolders: args["all-folders"] === true });
    return {
      json: { plugin: name, revoked: removed.length > 0, folders: removed },
      text: removed.length
        ? `revoked the approval of ${inert(name)}${removed.length === 1 ? ` at ${inert(removed[0]!)}` : ` in ${removed.length} folders: ${removed.map(inert).join(", ")}`}`
        : `${inert(name)} was not approved${folder === null ? "" : ` at ${inert(folder)}`}; nothing to revoke`,
    };
  },
});
