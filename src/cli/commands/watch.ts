import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError } from "../../errors.ts";
import { inert, inertBlock } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import type { Submit } from "../../protocol/result.ts";
import { openSession } from "../_session.ts";
import { err, isTTY, out } from "../_stdio.ts";

export default defineCommand({
  meta: commandMeta({
    name: "watch",
    description: "Print the work a client plugin submits (each goal on a line; --jsonl: a JSON line each; --json: one document at the end), until --for or --count runs out, or Ctrl-C",
    summary: "Print the work a plugin submits",
  }),
  args: {
    ...pluginArg,
    for: { type: "string", description: "Stop watching after this many milliseconds", valueHint: "MS" },
    count: { type: "string", description: "Stop after this many submits", valueHint: "N" },
    command: { type: "string", description: "First run this command in the same session, e.g. 'remind in 2s run the tests'", valueHint: "TEXT" },
    jsonl: { type: "boolean", description: "Print each submit as a JSON line as it arrives" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const jsonl = args.jsonl === true;
    if (jsonl && options.json) throw new CxError("E_USAGE", "give --json (one document at the end) or --jsonl (a line per submit), not both");
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
    const submits: Submit[] = [];
    let ran: { name: string; status: string; message: string | null } | null = null;
    try {
      const watching = (async () => {
        for await (const submit of plugin.submits(stop.signal)) {
          submits.push(submit);
          if (jsonl) out(JSON.stringify(submit) + "\n");
          else if (!options.json) out(`${isTTY(1) ? inert(submit.goal) : submit.goal}\n`);
          if (submits.length >= limit) stop.abort();
        }
      })();
      if (typeof args.command === "string") {
        const line = args.command.trim().replace(/^\//, "");
        const space = line.search(/\s/);
        const name = space < 0 ? line : line.slice(0, space);
        const result = await plugin.command(name, space < 0 ? "" : line.slice(space));
        ran = { name, ...result };
        err(`/${inert(name)}: ${result.status}${result.message ? `: ${inertBlock(result.message)}` : ""}\n`);
      }
      await watching;
    } finally {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", onSigint);
    }
    const count = submits.length;
    if (!options.json) err(`watched ${plugin.name}: ${count} submit${count === 1 ? "" : "s"}\n`);
    return { json: options.json ? { plugin: plugin.name, command: ran, submits, interrupted } : undefined, exitCode: interrupted ? 130 : 0 };
  },
});
