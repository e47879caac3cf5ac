import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { existsSync, realpathSync, rmSync } from "node:fs";
import { CxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { revokeApproval } from "../../trust/approvals.ts";
import { revokeGrantsOfFolder } from "../../trust/grants.ts";
import { globalOptions } from "../_args.ts";
import { hintCommand, shellWord } from "../_hints.ts";
import { installedFolder } from "../_installed.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: commandMeta({ name: "uninstall", description: "Remove a plugin `install` put in the plugins folder, with its approvals and permission grants", summary: "Remove an installed plugin, its approvals and its permission grants" }),
  args: {
    name: { type: "positional", description: "The installed plugin's name", required: true },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const name = String(args.name);
    await using session = await openSession(options);
    const folder = installedFolder(session.folders.configDir, name);
    if (name.includes("/") || name === "." || name === ".." || !existsSync(folder)) {
      const elsewhere = session.catalog().find((e) => e.name === name)?.location?.folder;
      throw new CxError("E_NOT_FOUND", `no plugin named '${name}' is installed in ${installedFolder(session.folders.configDir, "")}`, {
        hint: elsewhere
          ? `a plugin of that name is at ${elsewhere}, which install did not put there: remove it yourself, and '${hintCommand(`revoke ${shellWord(elsewhere)}`)}' withdraws its approval`
          : `'${hintCommand("list")}' shows the plugins there are`,
        details: { plugin: name },
      });
    }
    const real = realpathSync(folder);
    const approvals = revokeApproval(session.folders.stateDir, name, real);
    const grants = revokeGrantsOfFolder(session.folders.stateDir, name, real);
    rmSync(folder, { recursive: true, force: true });
    return {
      json: { plugin: name, folder, uninstalled: true, approvalsRemoved: approvals.length, grantsRemoved: grants },
      text: `uninstalled ${inert(name)} from ${inert(folder)}; removed ${approvals.length} approval${approvals.length === 1 ? "" : "s"} and ${grants} permission grant${grants === 1 ? "" : "s"}`,
    };
  },
});
