import { defineCommand } from "citty";
import { CxError } from "../../errors.ts";
import { inert, inertBlock } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: {
    name: "watch",
    description: "Print the work a client plugin submits, one JSON line each, until --for or --count runs out, or Ctrl-C",
  },
  args: {
    ...pluginArg,
    for: { type: "string", description: "Stop watching after this many milliseconds", valueHint: "MS" },
    count: { type: "string", description: "Stop after this many submits", valueHint: "N" },
    command: { type: "string", description: "First run this command in the same session, e.g. 'remind in 2s run the tests'", valueHint: "TEXT" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    let forMs: number | undefined;
    if (args.for !== undefined) {
      forMs = Number(args.for);
      if (!Number.isInteger(forMs) || forMs <= 0) throw new CxError("E_USAGE", `--for takes a positive number of milliseconds, not '${args.for}'`);
    }
    let limit = Infinity;
    if (args.count !== undefined) {
      limit = Number(args.count);
      if (!Number.isInteger(limit) || limit <= 0) throw new CxError("E_USAGE", `--count takes a positive number, not '${args.count}'`);
    }
    await using session = await openSession(options);
    const plugin = await session.load(args.plugin);
    if (!plugin.manifest.client) {
      throw new CxError("E_INVALID_INPUT", `plugin '${plugin.name}' is not a client (its manifest does not say client: true), so it never submits work`);
    }
    const stop = new AbortController();
    const timer = forMs === undefined ? null : setTimeout(() => stop.abort(), forMs);
    let interrupted = false;
    const onSigint = () => {
      interrupted = true;
      stop.abort();
    };
    process.once("SIGINT", onSigint);
    let count = 0;
    try {
      const watching = (async () => {
        for await (const submit of plugin.submits(stop.signal)) {
          process.stdout.write(JSON.stringify(submit) + "\n");
          if (++count >= limit) stop.abort();
        }
      })();
      if (typeof args.command === "string") {
        const line = args.command.trim().replace(/^\//, "");
        const space = line.search(/\s/);
        const name = space < 0 ? line : line.slice(0, space);
        const result = await plugin.command(name, space < 0 ? "" : line.slice(space));
        process.stderr.write(`/${inert(name)}: ${result.status}${result.message ? `: ${inertBlock(result.message)}` : ""}\n`);
      }
      await watching;
    } finally {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", onSigint);
    }
    if (!options.json) process.stderr.write(`watched ${plugin.name}: ${count} submit${count === 1 ? "" : "s"}\n`);
    return { json: undefined, exitCode: interrupted ? 130 : 0 };
  },
});
