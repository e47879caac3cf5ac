import { defineCommand } from "citty";
import { ptr } from "bun:ffi";
import { commandMeta } from "../_meta.ts";
import { fstatSync, readFileSync } from "node:fs";
import { linuxLibc } from "../../libc.ts";
import { CxError, resultExitCode } from "../../errors.ts";
import type { CallEvent } from "../../host/connection.ts";
import { isDeniedByHost, type JobResult } from "../../protocol/result.ts";
import { inert, inertBlock } from "../../inert.ts";
import { globalOptions, pluginArg, repeatedValues } from "../_args.ts";
import { type CommandResult, errorJson, printError } from "../_output.ts";
import { openSession } from "../_session.ts";
import { hintCommand, shellWord } from "../_hints.ts";
import type { Session } from "../../session/session.ts";
import { cliPermission } from "../_permission.ts";
import { projectScope } from "../../trust/grants.ts";
import { progressView } from "../_progress.ts";
import { err, isTTY, out, stderrOutput } from "../_stdio.ts";
import { DELIVERY_CAP_DEFAULT, DELIVERY_CAP_MIN } from "../../results/deliver.ts";

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

/** Without <tool>, run() names the plugin's tools (read from its sidecar: nothing runs). */
export const explainsMissing = ["tool"];

export default defineCommand({
  meta: commandMeta({ name: "invoke", description: "Call one of a plugin's tools", summary: "Call one of a plugin's tools" }),
  args: {
    ...pluginArg,
    tool: { type: "positional", description: "The tool to call", required: true },
    input: { type: "positional", description: "'-' to read the arguments from stdin", required: false },
    args: { type: "string", description: "The arguments, a JSON object", valueHint: "JSON" },
    field: { type: "string", description: "One argument as key=value, repeatable, over --args' (as gh api --field; a value the tool's schema wants as a number or boolean is taken as one)", valueHint: "KEY=VALUE" },
    "args-file": { type: "string", description: "Read the arguments from a file", valueHint: "FILE" },
    timeout: { type: "string", description: "Give up after this many milliseconds (exit 6)", valueHint: "MS" },
    allow: { type: "boolean", description: "Allow this one call if it needs permission (no TTY needed)" },
    jsonl: { type: "boolean", description: "Each report of the call as a JSON line, then the envelope as the last line" },
    stream: { type: "boolean", description: "Off a terminal too, write the text the plugin streams and its log reports to stderr" },
    "max-output": { type: "string", description: "Deliver at most this many bytes of the output's text, the whole kept for `cxagent result` (0: all; default 102400 on a terminal, all in a pipe or with --json)", valueHint: "BYTES" },
  },
  async run({ args, rawArgs }): Promise<CommandResult> {
    const options = globalOptions(args);
    const jsonl = args.jsonl === true;
    if (jsonl && options.json) throw new CxError("E_USAGE", "give --json (one document) or --jsonl (lines), not both");
    const input = withPairs(readArguments(args.args, args["args-file"], args.input), repeatedValues(rawArgs, "--field"));
    const timeoutMs = parseTimeout(args.timeout);
    const maxOutputBytes = parseMaxOutput(args["max-output"]);
    const defaultMaxOutputBytes = isTTY(1) && !options.json && !jsonl ? DELIVERY_CAP_DEFAULT : undefined;
    await using session = await openSession(options);
    if (args.tool === undefined || args.tool === "") throw missingTool(session, args.plugin);
    const { plugin, timings } = await session.loadTimed(args.plugin);
    if (options.verbose) {
      // --verbose said nothing on success: what was loaded from where, and where the time went.
      const steps = timings.steps.map((t) => `${t.step} ${t.ms.toFixed(1)}`).join(", ");
      err(`[verbose] loaded ${inert(plugin.name)} ${inert(plugin.manifest.version)} from ${inert(plugin.library)} in ${timings.steps.reduce((sum, t) => sum + t.ms, 0).toFixed(1)} ms (${steps} ms)\n`);
    }
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
      result = await plugin.invoke(args.tool, input, { timeoutMs, maxOutputBytes, defaultMaxOutputBytes, signal: interrupted.signal, onEvent, permission: cliPermission(args.allow === true, { stateDir: session.folders.stateDir, project: projectScope(session.cwd) }) });
    } catch (error) {
      if (interrupted.signal.aborted) throw new CxError("E_INTERRUPTED", `the call to ${args.tool} was interrupted`);
      throw error;
    } finally {
      process.off("SIGINT", onSigint);
      view?.finish();
    }
    if (options.verbose) err(`[verbose] ${inert(args.tool)} answered in ${result.durationMs} ms: success ${result.success}, exit code ${resultExitCode(result)}\n`);
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
    } else if (!result.success && !options.json) {
      // Exit 1 with nothing said was a mystery, e.g. a TypeScript result that left out success: true.
      err(`${args.tool} failed without an errorMessage: its result did not say "success": true\n`);
    } else if (result.success && typeof result.output.content !== "string" && !options.json) {
      err(`note: ${args.tool}'s result has no output.content, the text a model reads; ${Object.keys(result.output).length ? "shown here as its output in JSON, which is what a model gets over MCP" : "its output is empty"}\n`);
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
    if (stdinHasData()) err("note: stdin holds data, which invoke reads only when given '-' (invoke <plugin> <tool> -); calling with no arguments ({})\n");
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

function parseMaxOutput(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || (n > 0 && n < DELIVERY_CAP_MIN)) throw new CxError("E_USAGE", `--max-output takes a number of bytes, at least ${DELIVERY_CAP_MIN}, or 0 for all, not '${String(value)}'`);
  return n;
}

function parseTimeout(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CxError("E_USAGE", `--timeout takes a positive number of milliseconds, not '${String(value)}'`);
  return n;
}

/** `invoke <plugin>` without a tool: the usage error names the plugin's tools, as its sidecar declares them. */
function missingTool(session: Session, ref: string): CxError {
  const inspected = session.inspect(ref);
  const tools = inspected.manifest.tools.map((t) => t.name);
  return new CxError("E_USAGE", `'cxagent invoke' needs <tool>: ${tools.length ? `plugin '${inspected.name}' has ${tools.join(", ")}` : `plugin '${inspected.name}' declares no tools in its sidecar`}`, {
    hint: `${hintCommand(`describe ${shellWord(ref)}`)} shows each tool's arguments`,
  });
}

/**
 * --field key=value pairs over the arguments object (as gh api -f): each value a string, which the
 * tool's inputSchema turns into the number or boolean it wants (arguments' coercion).
 */
function withPairs(input: unknown, pairs: readonly string[]): unknown {
  if (pairs.length === 0) return input;
  if (input === null || typeof input !== "object" || Array.isArray(input)) return input; // the schema check names what is wrong
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new CxError("E_USAGE", `--field takes key=value, not '${pair}'`, { hint: `e.g. --field a=6 --field b=7; nested or typed values go in --args '{...}'` });
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/**
 * Whether stdin holds arguments the user may have meant to pass (`echo '{...}' | cxagent invoke p t`
 * without '-'): a non-empty file, or a pipe or socket with data ready now. Never reads it. As gh
 * api's --input -, it is read only when asked; this only says so.
 */
function stdinHasData(): boolean {
  let stat: ReturnType<typeof fstatSync>;
  try {
    stat = fstatSync(0);
  } catch {
    return false;
  }
  if (stat.isFile()) return stat.size > 0;
  if (!stat.isFIFO() && !stat.isSocket()) return false; // a terminal, /dev/null
  const libc = linuxLibc();
  if (!libc) return false;
  const fds = new Int32Array(2); // struct pollfd { int fd; short events; short revents; }
  const view = new DataView(fds.buffer);
  view.setInt32(0, 0, true);
  view.setInt16(4, 1, true); // POLLIN
  if (libc.poll(ptr(fds), 1, 0) !== 1) return false;
  return (view.getInt16(6, true) & 1) !== 0; // POLLIN: data (an empty pipe whose writer left gives POLLHUP alone)
}
