import { defineCommand } from "citty";
import { CxError } from "../../errors.ts";
import { readSidecar } from "../../discovery/sidecar.ts";
import { isInteractive } from "../../prompt.ts";
import { readApprovals, recordApproval, trustState } from "../../trust/approvals.ts";
import { askOnTerminal, trustRequest } from "../../trust/check.ts";
import { loadSetHash } from "../../trust/hash.ts";
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
    await using session = await openSession(options);
    const location = session.locate(args.plugin);
    const manifest = readSidecar(location.sidecar, location.library);
    const loadSet = loadSetHash(location.folder, location.library);
    const stateDir = session.folders.stateDir;
    const state = trustState(readApprovals(stateDir), manifest.name, loadSet.hash);
    const done = (how: string, already = false): CommandResult => ({
      json: { plugin: manifest.name, version: manifest.version, hash: loadSet.hash, folder: location.folder, approved: true, already },
      text: already ? `${manifest.name} ${manifest.version} is already approved (hash ${loadSet.hash})` : `approved ${manifest.name} ${manifest.version} ${how} (hash ${loadSet.hash})`,
    });
    if (typeof args.hash === "string") {
      const given = args.hash.trim().toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(given)) throw new CxError("E_USAGE", `--hash takes 64 hexadecimal digits, not '${args.hash}'`);
      if (given !== loadSet.hash) {
        throw new CxError("E_NOT_APPROVED", `plugin '${manifest.name}' was not approved: its files hash to ${loadSet.hash}, not to the ${given} you gave`, {
          hint: "the files differ from the ones you meant to approve; review them with cxagent describe",
          details: { plugin: manifest.name, computed: loadSet.hash, given },
        });
      }
      if (state === "approved") return done("", true);
      recordApproval(stateDir, manifest.name, loadSet.hash, location.folder);
      return done("by pinned hash");
    }
    if (state === "approved") return done("", true);
    if (!isInteractive()) {
      throw new CxError("E_NEEDS_TTY", `approving plugin '${manifest.name}' needs a terminal to ask on`, {
        hint: `review it with 'cxagent describe ${args.plugin}', then pin its hash: cxagent approve ${args.plugin} --hash ${loadSet.hash}`,
        details: { plugin: manifest.name, hash: loadSet.hash },
      });
    }
    if (!(await askOnTerminal(trustRequest(manifest.name, manifest, location.library, loadSet, state)))) {
      throw new CxError("E_DENIED", `plugin '${manifest.name}' was not approved`);
    }
    recordApproval(stateDir, manifest.name, loadSet.hash, location.folder);
    return done("");
  },
});
