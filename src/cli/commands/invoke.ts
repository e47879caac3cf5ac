import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { readFileSync } from "node:fs";
import { CxError, resultExitCode } from "../../errors.ts";
import type { CallEvent } from "../../host/connection.ts";
import { isDeniedByHost, type JobResult } from "../../protocol/result.ts";
import { inertBlock } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import { type CommandResult, errorJson, printError } from "../_output.ts";
import { openSession } from "../_session.ts";
import { cliPermission } from "../_permission.ts";
import { projectScope } from "../../trust/grants.ts";
import { progressView } from "../_progress.ts";
import { err, out, stderrOutput } from "../_stdio.ts";

/**
 * The one envelope of invoke, in --json and --jsonl alike: `ok` is false exactly when the exit code
 * is neither 0 nor 1 — the call did not produce a result of the tool's own (it failed, timed out,
 * was interrupted, or cxagent denied it; a denied call keeps its result).
 */
export function envelope(result: JobResult | null, error: CxError | null) {
  return { ok: error === null, result, error: error === null ? null : errorJson(error) };
}

/** How a failure before or during the call is printed with --json / --jsonl (see main). */
export function errorDocument(error: CxError) {
  return envelope(null, error);
}

/** A call cxagent denied (exit 4), as an error for the envelope and the terminal. */
function denial(result: JobResult, plugin: string, tool: string): CxError {
  return new CxError("E_DENIED", result.errorMessage ?? `${tool} was not run: permission was denied`, {
    next: result.decidedBy === "policy" ? { do: "allow-call", plugin, tool } : undefined,
    details: { decidedBy: result.decidedBy },
  });
}

export default defineCommand({
  meta: commandMeta({ name: "invoke", description: "Call one of a plugin's tools", summary: "Call one of a plugin's tools" }),
  args: {
    ...pluginArg,
    tool: { type: "positional", description: "The tool to call", required: true },
    input: { type: "positional", description: "'-' to read the arguments from stdin", required: false },
    args: { type: "string", description: "The arguments, a JSON object", valueHint: "JSON" },
    "args-file": { type: "string", description: "Read the arguments from a file", valueHint: "FILE" },
    timeout: { type: "string", description: "Give up after this many milliseconds (exit 6)", valueHint: "MS" },
    allow: { type: "boolean", description: "Allow this one call if it needs permission (no TTY needed)" },
    jsonl: { type: "boolean", description: "Each report of the call as a JSON line, then the envelope as the last line" },
    stream: { type: "boolean", description: "Off a terminal too, write the text the plugin streams and its log reports to stderr" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const jsonl = args.jsonl === true;
    if (jsonl && options.json) throw new CxError("E_USAGE", "give --json (one document) or --jsonl (lines), not both");
    const input = readArguments(args.args, args["args-file"], args.input);
    const timeoutMs = parseTimeout(args.timeout);
    await using session = await openSession(options);
    const plugin = await session.load(args.plugin);
    const interrupted = new AbortController();
    const onSigint = () => interrupted.abort();
    process.once("SIGINT", onSigint);
    const view = jsonl ? null : progressView(plugin.name, options.verbose, stderrOutput, { stream: args.stream === true });
    const onEvent = (event: CallEvent) => {
      if (jsonl) out(JSON.stringify(event) + "\n");
      view?.onEvent(event);
    };
    let result: JobResult;
    try {
      result = await plugin.invoke(args.tool, input, { timeoutMs, signal: interrupted.signal, onEvent, permission: cliPermission(args.allow === true, { stateDir: session.folders.stateDir, project: projectScope(session.cwd) }) });
    } catch (error) {
      if (interrupted.signal.aborted) throw new CxError("E_INTERRUPTED", `the call to ${args.tool} was interrupted`);
      throw error;
    } finally {
      process.off("SIGINT", onSigint);
      view?.finish();
    }
    const exitCode = resultExitCode(result);
    // Exit 4 only when cxagent denied the call; a denial the tool reports itself is its failure (1).
    const denied = isDeniedByHost(result) ? denial(result, plugin.name, args.tool) : null;
    const doc = envelope(result, denied);
    if (jsonl) {
      out(JSON.stringify(doc) + "\n");
      return { json: undefined, exitCode };
    }
    if (denied) {
      if (!options.json) printError(denied, "text");
      return { json: doc, exitCode };
    }
    if (!result.success && result.errorMessage && !options.json) {
      const claim = result.permissionDenied ? " (the tool reports that permission was denied; cxagent did not deny it)" : "";
      err(`${args.tool} failed${claim}: ${inertBlock(result.errorMessage)}\n`);
    }
    return { json: doc, text: contentOf(result), exitCode };
  },
});

/** The text a model would read: output.content, or the output as JSON when it has none. */
function contentOf(result: JobResult): string {
  const content = result.output.content;
  if (typeof content === "string") return content;
  if (content !== undefined) return JSON.stringify(content, null, 2);
  return Object.keys(result.output).length ? JSON.stringify(result.output, null, 2) : "";
}

function readArguments(inline: unknown, file: unknown, marker: unknown): unknown {
  const sources = [inline !== undefined, file !== undefined, marker === "-"].filter(Boolean).length;
  if (sources > 1) throw new CxError("E_USAGE", "give the arguments one way: --args, --args-file or '-'");
  if (marker !== undefined && marker !== "-") {
    throw new CxError("E_USAGE", `unexpected argument '${String(marker)}'`, { hint: "pass the tool's arguments with --args '{...}'" });
  }
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
