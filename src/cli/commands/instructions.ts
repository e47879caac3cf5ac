import { defineCommand } from "citty";
import { catalog } from "../../discovery/catalog.ts";
import { readSidecar } from "../../discovery/sidecar.ts";
import { CxError } from "../../errors.ts";
import { composeInstructions } from "../../host/session.ts";
import type { Manifest } from "../../protocol/manifest.ts";
import { readApprovals, trustState } from "../../trust/approvals.ts";
import { loadSetHash } from "../../trust/hash.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: {
    name: "instructions",
    description: "The instructions plugins add for the model, as a session would compose them (from their sidecars; no plugin code runs)",
  },
  args: {
    plugins: { type: "positional", description: "Plugins to include (default: every enabled, approved plugin)", required: false },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const approvals = readApprovals(session.folders.stateDir);
    const chosen: Manifest[] = [];
    const skipped: { plugin: string; why: string }[] = [];
    const named = args._;
    const candidates = named.length
      ? named.map((ref) => {
          const location = session.locate(ref);
          return { ref, location, manifest: readSidecar(location.sidecar, location.library), enabled: true };
        })
      : catalog(session.config, session.searchFolders).flatMap((e) => (e.location && e.manifest ? [{ ref: e.name, location: e.location, manifest: e.manifest, enabled: e.enabled }] : []));
    for (const c of candidates) {
      if (!c.enabled) {
        skipped.push({ plugin: c.manifest.name, why: "disabled in config.json" });
        continue;
      }
      const state = trustState(approvals, c.manifest.name, loadSetHash(c.location.folder).hash);
      if (state !== "approved") {
        if (named.length) {
          throw new CxError("E_NOT_APPROVED", `plugin '${c.manifest.name}' is not approved, so its instructions would not be loaded`, {
            hint: `approve it first: cxagent approve ${c.ref}`,
          });
        }
        skipped.push({ plugin: c.manifest.name, why: state === "changed" ? "changed since it was approved" : "not approved" });
        continue;
      }
      chosen.push(c.manifest);
    }
    for (const s of skipped) if (!options.json) process.stderr.write(`skipped ${s.plugin}: ${s.why}\n`);
    const text = composeInstructions(chosen);
    return { json: { instructions: text, plugins: chosen.map((m) => m.name), skipped }, text };
  },
});
