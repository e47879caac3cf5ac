import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { commandExitCode } from "../../errors.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { progressView } from "../_progress.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: commandMeta({ name: "command", description: "Run one of a plugin's commands, as a person would type it (/name text)", summary: "Run one of a plugin's commands" }),
  args: {
    ...pluginArg,
    name: { type: "positional", description: "The command's name (without the slash)", required: true },
    text: { type: "positional", description: "Everything after the name, passed as one trimmed string (use -- before text that starts with -)", required: false },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const name = args.name.replace(/^\//, "");
    const text = args._.slice(2).join(" ");
    await using session = await openSession(options);
    const plugin = await session.load(args.plugin);
    const view = progressView(plugin.name, options.verbose);
    let result;
    try {
      result = await plugin.command(name, text, { onEvent: (e) => view?.onEvent(e) });
    } finally {
      view?.finish();
    }
    return {
      json: result,
      text: result.message ?? "",
      exitCode: commandExitCode(result),
    };
  },
});
