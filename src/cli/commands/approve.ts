import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError, isCxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { globalOptions, hashArg, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { isInteractive } from "../_prompt.ts";
import { openSession } from "../_session.ts";
import type { Session } from "../../index.ts";
import { trustPrompt } from "../_trust-prompt.ts";

/**
 * A plugin without a sidecar declares its tools only when it runs (issue 42 point 2: "described once
 * at approval"). Its bytes are approved now, so one start describes it; the load keeps what it says
 * (session/described.ts) for `cxagent mcp` to list it without running it. A plugin whose kind has a
 * sidecar, or one described before from these bytes and settings, is not started. A failed start
 * leaves the approval as it is and is said, not thrown: the plugin is then described at its first start.
 */
async function describeOnce(session: Session, ref: string): Promise<{ ok: true; tools: number } | { ok: false; error: string } | null> {
  const inspected = session.inspect(ref);
  if (inspected.profile.sidecar || inspected.described !== null || inspected.trust.state !== "approved") return null;
  try {
    const plugin = await session.load(ref);
    const tools = plugin.manifest.tools.length;
    await session.unload(plugin.name);
    return { ok: true, tools };
  } catch (error) {
    if (!isCxError(error)) throw error;
    return { ok: false, error: `approved, but describing it failed (${error.code}: ${error.message}); it will be described at its first start` };
  }
}

export default defineCommand({
  meta: commandMeta({ name: "approve", description: "Approve a plugin's exact files: asks on a terminal, or checks a pinned hash", summary: "Approve a plugin's exact files, interactively or by pinned hash" }),
  args: {
    ...pluginArg,
    hash: { type: "string", description: "Approve without asking, only if the files hash to this (64 hex digits)", valueHint: "HEX" },
    describe: {
      type: "boolean",
      default: true,
      description:
        "Once approved, start a plugin that declares its tools only when it runs (a Cortex native one) and keep what it describes, so `cxagent mcp` lists it without running it",
      negativeDescription: "Run nothing: such a plugin is then described at its first start",
    },
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
    const described = args.describe ? await describeOnce(session, args.plugin) : null;
    const said = approved.already
      ? `${what} is already approved at ${inert(approved.folder)} (hash ${approved.hash})`
      : `approved ${what} at ${inert(approved.folder)} ${hash ? "by pinned hash " : ""}(hash ${approved.hash})`;
    return {
      json: { ...approved, approved: true, ...(described ? { described } : {}) },
      text: described?.ok === false ? `${said}\nwarning: ${inert(described.error)}` : described?.ok ? `${said}; described: ${described.tools} tools` : said,
    };
  },
});
