import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { existsSync } from "node:fs";
import { inert } from "../../inert.ts";
import { resolveFolders } from "../../discovery/paths.ts";
import { readApprovals } from "../../trust/approvals.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: commandMeta({ name: "approvals", description: "Every stored approval: which plugin, at which folder, which hash, since when (nothing is hashed or run)", summary: "List the stored approvals: plugin, folder, hash, since when" }),
  args: {},
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const { stateDir } = resolveFolders(options);
    const approvals = readApprovals(stateDir).map((a) => ({
      plugin: a.plugin,
      folder: a.directory,
      hash: a.hash,
      approvedAt: a.approvedAt,
      files: a.files?.length ?? null,
      folderExists: existsSync(a.directory),
    }));
    const text = approvals.length
      ? approvals
          .map((a) => `${inert(a.plugin)}  ${inert(a.folder)}${a.folderExists ? "" : " (folder gone)"}\n  hash ${a.hash}, ${a.files === null ? "no file list" : `${a.files} file${a.files === 1 ? "" : "s"}`}, since ${inert(a.approvedAt)}`)
          .join("\n")
      : "no approvals";
    return { json: { approvals, stateDir }, text };
  },
});
