import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError } from "../../errors.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";
import { shownDisplay } from "../_permission.ts";
import type { GateDecision } from "../../host/gate.ts";
import { askedBecause } from "../../host/tool-policy.ts";
import { inert } from "../../inert.ts";

export default defineCommand({
  meta: commandMeta({ name: "gate", description: "Show whether a call would need permission, and how it would be asked — without making the call", summary: "Show the permission decision for a call, without making it" }),
  args: {
    ...pluginArg,
    tool: { type: "positional", description: "The tool", required: true },
    args: { type: "string", description: "The call's arguments, a JSON object", valueHint: "JSON" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    let input: unknown = {};
    if (typeof args.args === "string") {
      try {
        input = JSON.parse(args.args);
      } catch (error) {
        throw new CxError("E_INVALID_INPUT", `--args is not valid JSON: ${(error as Error).message}`);
      }
    }
    await using session = await openSession(options);
    const plugin = await session.load(args.plugin);
    const d = await plugin.gate(args.tool, input);
    const source = d.source === "gate" ? "the plugin's gate" : d.source === "gate-failed" ? "a failed gate" : "the manifest";
    const text = !d.ask
      ? `${args.tool} runs without asking (decided by ${source}).`
      : d.forcedBy
        ? forcedText(args.tool, d)
        : d.granted
        ? `${args.tool} needs permission, and a stored grant (${d.rule}) allows it in this project.`
        : `${args.tool} asks first (decided by ${source}): "${shownDisplay(d.display)}". Always is ${d.alwaysOffered ? `offered (it would store: ${d.rule})` : "not offered"}.`;
    return { json: d, text };
  },
});

/** Why a call asks when a config rule makes its tool ask on every call. */
function forcedText(tool: string, d: GateDecision): string {
  return `${tool} ${inert(askedBecause(d.forcedBy!))}: "${shownDisplay(d.display)}". Always is not offered, and no stored grant answers it.`;
}
