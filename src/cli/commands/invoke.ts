import { defineCommand } from "citty";
import { readFileSync } from "node:fs";
import { CxError, resultExitCode } from "../../errors.ts";
import type { CallEvent } from "../../host/connection.ts";
import { isDeniedByHost, type JobResult } from "../../protocol/result.ts";
import { inertBlock } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";
import { cliPermission } from "../_permission.ts";
import { progressView } from "../_progress.ts";

export default defineCommand({
  meta: { name: "invoke", description: "Call one of a plugin's tools" },
  args: {
    ...pluginArg,
    tool: { type: "positional", description: "The tool to call", required: true },
    input: { type: "positional", description: "'-' to read the arguments from stdin", required: false },
    args: { type: "string", description: "The arguments, a JSON object", valueHint: "JSON" },
    "args-file": { type: "string", description: "Read the arguments from a file", valueHint: "FILE" },
    timeout: { type: "string", description: "Give up after this many milliseconds (exit 6)", valueHint: "MS" },
    allow: { type: "boolean", description: "Allow this one call if it needs permission (no TTY needed)" },
    jsonl: { type: "boolean", description: "Stream the call's events as JSON lines, then the envelope" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const input = readArguments(args.args, args["args-file"], args.input, args._);
    const timeoutMs = parseTimeout(args.timeout);
    const jsonl = args.jsonl === true;
    await using session = await openSession(options);
    const plugin = await session.load(args.plugin);
    const interrupted = new AbortController();
    const onSigint = () => interrupted.abort();
    process.once("SIGINT", onSigint);
    const view = jsonl ? null : progressView(plugin.name, options.verbose);
    const onEvent = (event: CallEvent) => {
      if (jsonl) process.stdout.write(JSON.stringify(event) + "\n");
      view?.onEvent(event);
    };
    let result: JobResult;
    try {
      result = await plugin.invoke(args.tool, input, { timeoutMs, signal: interrupted.signal, onEvent, permission: cliPermission(args.allow === true) });
    } catch (error) {
      if (jsonl && error instanceof CxError) {
        process.stdout.write(JSON.stringify({ ok: false, result: null, error: error.toJSON() }) + "\n");
        return { json: undefined, exitCode: interrupted.signal.aborted ? 130 : error.exitCode };
      }
      if (interrupted.signal.aborted) throw new CxError("E_INTERRUPTED", `the call to ${args.tool} was interrupted`);
      throw error;
    } finally {
      process.off("SIGINT", onSigint);
      view?.finish();
    }
    const envelope = { ok: true, result, error: null };
    // Exit 4 only when cxagent denied the call; a denial the tool reports itself is its failure (1).
    const deniedByUs = isDeniedByHost(result);
    const exitCode = resultExitCode(result);
    if (jsonl) {
      process.stdout.write(JSON.stringify(envelope) + "\n");
      return { json: undefined, exitCode };
    }
    if (deniedByUs) {
      if (!options.json) {
        const how = result.decidedBy === "policy" ? "\nhint: there was no terminal to ask on; pass --allow to allow this one call" : "";
        process.stderr.write(`${inertBlock(result.errorMessage ?? "")}${how}\n`);
      }
      return { json: envelope, exitCode };
    }
    if (!result.success && result.errorMessage && !options.json) {
      const claim = result.permissionDenied ? " (the tool reports that permission was denied; cxagent did not deny it)" : "";
      process.stderr.write(`${args.tool} failed${claim}: ${inertBlock(result.errorMessage)}\n`);
    }
    return { json: envelope, text: contentOf(result), exitCode };
  },
});

/** The text a model would read: output.content, or the output as JSON when it has none. */
function contentOf(result: JobResult): string {
  const content = result.output.content;
  if (typeof content === "string") return content;
  if (content !== undefined) return JSON.stringify(content, null, 2);
  return Object.keys(result.output).length ? JSON.stringify(result.output, null, 2) : "";
}

function readArguments(inline: unknown, file: unknown, marker: unknown, rest: string[]): unknown {
  const sources = [inline !== undefined, file !== undefined, marker === "-"].filter(Boolean).length;
  if (sources > 1) throw new CxError("E_USAGE", "give the arguments one way: --args, --args-file or '-'");
  if (marker !== undefined && marker !== "-") {
    throw new CxError("E_USAGE", `unexpected argument '${String(marker)}'`, { hint: "pass the tool's arguments with --args '{...}'" });
  }
  if (rest.length > 3) throw new CxError("E_USAGE", `unexpected argument '${rest[3]}'`);
  let text: string;
  let from: string;
  if (typeof inline === "string") {
    text = inline;
    from = "--args";
  } else if (typeof file === "string") {
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new CxError("E_INVALID_INPUT", `cannot read the arguments file ${file}: ${(error as Error).message}`);
    }
    from = file;
  } else if (marker === "-") {
    text = readFileSync(0, "utf8");
    from = "stdin";
  } else {
    return {};
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CxError("E_INVALID_INPUT", `the arguments from ${from} are not valid JSON: ${(error as Error).message}`, {
      hint: `quote the object for the shell: --args '{"a": 2, "b": 3}'`,
    });
  }
}

function parseTimeout(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CxError("E_USAGE", `--timeout takes a positive number of milliseconds, not '${String(value)}'`);
  return n;
}
