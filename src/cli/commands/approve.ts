import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError, isCxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { globalOptions, hashArg, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { isInteractive } from "../_prompt.ts";
import { openSession } from "../_session.ts";
import { trustPrompt } from "../_trust-prompt.ts";

export default defineCommand({
  meta: commandMeta({ name: "approve", description: "Approve a plugin's exact files: asks on a terminal, or checks a pinned hash", summary: "Approve a plugin's exact files, interactively or by pinned hash" }),
  args: {
    ...pluginArg,
    hash: { type: "string", description: "Approve without asking, only if the files hash to this (64 hex digits)", valueHint: "HEX" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const hash = hashArg(args.hash);
    await using session = await openSession(options);
    // One read of the folder: the prompt, the hash compared and the approval recorded are of the same bytes.
    const approved = await session.approve(args.plugin, { hash, confirm: isInteractive() ? trustPrompt(session.folders.stateDir) : undefined }).catch((error: unknown) => {
      // Here, "nobody to ask" means no terminal to ask on.
      if (!isCxError(error, "E_NEEDS_TTY")) throw error;
      throw new CxError("E_NEEDS_TTY", `approving plugin '${String(error.details?.plugin)}' needs a terminal to ask on`, { next: error.next, details: error.details });
    });
    const what = `${inert(approved.plugin)} ${inert(approved.version)}`;
    return {
      json: { ...approved, approved: true },
      text: approved.already
        ? `${what} is already approved at ${inert(approved.folder)} (hash ${approved.hash})`
        : `approved ${what} at ${inert(approved.folder)} ${hash ? "by pinned hash " : ""}(hash ${approved.hash})`,
    };
  },
});
