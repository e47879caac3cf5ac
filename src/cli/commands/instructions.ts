import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError, isCxError } from "../../errors.ts";
import { composeInstructions, type InstructionsSource } from "../../session/instructions.ts";
import { inert } from "../../inert.ts";
import { ruleText } from "../../host/tool-policy.ts";
import type { Inspection } from "../../session/inspect.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";
import { err } from "../_stdio.ts";

export default defineCommand({
  meta: commandMeta({
    name: "instructions",
    description: "The instructions plugins add for the model, as a session would compose them (from their sidecars; no plugin code runs)",
    summary: "Print the instructions loaded plugins add for the model",
  }),
  args: {
    plugins: { type: "positional", description: "Plugins to include (default: every enabled, approved plugin)", required: false },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const chosen: InstructionsSource[] = [];
    const skipped: { plugin: string; why: string }[] = [];
    const named = args._;
    const candidates: { ref: string; inspected: Inspection; explicit: boolean }[] = named.length
      ? named.map((ref) => ({ ref, inspected: session.inspect(ref), explicit: true }))
      : session.catalog().flatMap((e) => {
          if (!e.location) return [];
          try {
            return [{ ref: e.name, inspected: session.inspectAt(e.location), explicit: false }];
          } catch (error) {
            if (!isCxError(error)) throw error;
            return []; // list shows why it cannot load
          }
        });
    for (const { ref, inspected, explicit } of candidates) {
      const name = inspected.name;
      if (explicit && inspected.disabled.project) {
        throw new CxError("E_DISABLED", `plugin '${name}' is disabled by this project's configuration (${ruleText(inspected.disabled.project)} is false), so its instructions would not be loaded`);
      }
      if (!explicit && !inspected.enabled) {
        skipped.push({ plugin: name, why: inspected.disabled.project ? "disabled by the project's .cxagent/config.json" : "disabled in config.json" });
        continue;
      }
      if (inspected.shadowing) {
        if (explicit) throw new CxError("E_SHADOWED", `plugin '${name}' at ${inspected.loadSet.realFolder} shadows the config.json entry '${inspected.shadowing.entry}', so its instructions would not be loaded`);
        skipped.push({ plugin: name, why: `shadows the config.json entry '${inspected.shadowing.entry}'` });
        continue;
      }
      const state = inspected.trust.state;
      if (state !== "approved") {
        if (explicit) {
          throw new CxError("E_NOT_APPROVED", `plugin '${name}' is not approved, so its instructions would not be loaded`, {
            next: { do: "approve", ref, hash: inspected.loadSet.hash },
          });
        }
        skipped.push({ plugin: name, why: state === "changed" ? "changed since it was approved" : "not approved" });
        continue;
      }
      const { hidden } = inspected.selection.policy;
      chosen.push({ manifest: inspected.manifest, tools: inspected.manifest.tools.filter((t) => !hidden.has(t.name)) });
    }
    for (const s of skipped) if (!options.json) err(`skipped ${inert(s.plugin)}: ${s.why}\n`);
    const text = composeInstructions(chosen);
    return { json: { instructions: text, plugins: chosen.map((c) => c.manifest.name), skipped }, text };
  },
});
