import { defineCommand } from "citty";
import { CxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { isInteractive } from "../../prompt.ts";
import { recordInspected, refusalOf, trustRequestOf } from "../../session/inspect.ts";
import { askOnTerminal } from "../../trust/check.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: { name: "approve", description: "Approve a plugin's exact files: asks on a terminal, or checks a pinned hash" },
  args: {
    ...pluginArg,
    hash: { type: "string", description: "Approve without asking, only if the files hash to this (64 hex digits)", valueHint: "HEX" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    let given: string | null = null;
    if (typeof args.hash === "string") {
      given = args.hash.trim().toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(given)) throw new CxError("E_USAGE", `--hash takes 64 hexadecimal digits, not '${args.hash}'`);
    }
    await using session = await openSession(options);
    // One read of the folder: the prompt, the hash compared and the approval recorded are of the same bytes.
    const inspected = session.inspect(args.plugin);
    const { manifest, loadSet } = inspected;
    const refusal = refusalOf(inspected);
    if (refusal) throw refusal; // approving what would be refused at load only misleads
    const done = (how: string, already = false): CommandResult => ({
      json: { plugin: manifest.name, version: manifest.version, hash: loadSet.hash, folder: loadSet.realFolder, approved: true, already },
      text: already
        ? `${inert(manifest.name)} ${inert(manifest.version)} is already approved at ${inert(loadSet.realFolder)} (hash ${loadSet.hash})`
        : `approved ${inert(manifest.name)} ${inert(manifest.version)} at ${inert(loadSet.realFolder)} ${how}(hash ${loadSet.hash})`,
    });
    if (given !== null) {
      if (given !== loadSet.hash) {
        throw new CxError("E_NOT_APPROVED", `plugin '${manifest.name}' was not approved: its files hash to ${loadSet.hash}, not to the ${given} you gave`, {
          hint: "the files differ from the ones you meant to approve; review them with cxagent describe",
          details: { plugin: manifest.name, computed: loadSet.hash, given },
        });
      }
      if (inspected.trust.state === "approved") return done("", true);
      recordInspected(inspected, session.folders.stateDir);
      return done("by pinned hash ");
    }
    if (inspected.trust.state === "approved") return done("", true);
    if (!isInteractive()) {
      throw new CxError("E_NEEDS_TTY", `approving plugin '${manifest.name}' needs a terminal to ask on`, {
        hint: `review it with 'cxagent describe ${args.plugin}', then pin its hash: cxagent approve ${args.plugin} --hash ${loadSet.hash}`,
        details: { plugin: manifest.name, hash: loadSet.hash },
      });
    }
    if (!(await askOnTerminal(trustRequestOf(inspected)))) {
      throw new CxError("E_DENIED", `plugin '${manifest.name}' was not approved`);
    }
    recordInspected(inspected, session.folders.stateDir);
    return done("");
  },
});
