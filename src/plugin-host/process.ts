/**
 * Starting a Cortex process plugin (protocol/cortex-process.ts): take its approved files from the
 * parent's sealed copy and write them into the private snapshot folder, read its manifest.toml
 * from those bytes, and serve its calls on the event loop (module-serve.ts), each call one process
 * of the tool's command run from the snapshot (process-run.ts). Its stdout carries one JSON answer:
 * a string, or {"output": string, "is_error"?: boolean, "media"?: [...]}; anything else fails the
 * call, naming what was wrong.
 */
import { chmodSync, closeSync, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { isOutside, type ProcessTool, readProcessManifest } from "../protocol/cortex-process.ts";
import { checkManifest, describeProblems } from "../protocol/manifest.ts";
import { decodeArchive, type ModuleArchive } from "../protocol/module-archive.ts";
import type { CallContext, JobResultInput, ModulePlugin } from "../protocol/module-plugin.ts";
import { preview } from "../protocol/issues.ts";
import { writeSnapshot } from "./module-loader.ts";
import { serve } from "./module-serve.ts";
import { endAllCalls, runToolProcess, type ToolOutcome } from "./process-run.ts";
import { type CallSandbox, callPolicy, launcherRefusal, readCallSandbox, sandboxCall } from "./process-sandbox.ts";
import { readyLine, tooLongText } from "./ready-line.ts";
import type { HostStart } from "./start.ts";

export async function startProcess({ libc, shim, settings, refuse, phase, protocolFd, requestFd }: HostStart): Promise<void> {
  const { libraryFd, snapshot: dir } = settings;
  if (libraryFd === null || dir === null) return refuse("load", "the plugin host was started without the plugin's approved files (--library-fd and --snapshot)");
  let archive: ModuleArchive;
  try {
    archive = decodeArchive(readFileSync(`/proc/self/fd/${libraryFd}`));
  } catch (error) {
    return refuse("load", `the plugin host could not read the plugin's approved files: ${(error as Error).message}`);
  } finally {
    closeSync(libraryFd);
  }
  // What the tools run inherits none of the protocol's descriptors.
  libc.closeOnExec(protocolFd);
  libc.closeOnExec(requestFd);
  process.on("exit", endAllCalls);

  const read = readProcessManifest(archive.files.get(archive.entry) ?? new Uint8Array());
  if (!read.ok) return refuse("manifest", `the manifest.toml has ${read.problems.length} problem${read.problems.length === 1 ? "" : "s"}:\n${describeProblems(read.problems)}`);
  const checked = checkManifest(read.plugin.manifest);
  if (!checked.ok) return refuse("manifest", `the manifest made from manifest.toml has problems:\n${describeProblems(checked.problems)}`);

  phase("snapshot");
  let root: string;
  let shown: (text: string) => string;
  try {
    ({ root, shown } = writeSnapshot(dir, archive));
  } catch (error) {
    return refuse("load", `the plugin host could not prepare the plugin's approved files: ${(error as Error).message}`);
  }
  // A tool's command inside the folder runs from the approved copy, made executable there.
  const where = (path: string) => (isOutside(path) ? resolve(archive.folder, path) : join(root, path));
  for (const tool of read.plugin.tools) {
    const command = where(tool.command);
    if (!isOutside(tool.command)) {
      if (!archive.files.has(normalRel(tool.command))) return refuse("manifest", `tool '${tool.name}' runs ${tool.command}, which is not a file in the plugin's folder`);
      chmodSync(command, 0o700);
    } else if (!existsSync(command) || !statSync(command).isFile()) {
      return refuse("manifest", `tool '${tool.name}' runs ${command}, which is not a file`);
    }
  }

  // [cxagent.sandbox]: each call's process through the launcher, the snapshot and allowed outside paths added to the policy.
  let sandbox: CallSandbox | null = null;
  if (settings.callSandbox !== undefined) {
    const given = readCallSandbox(settings.callSandbox);
    if ("error" in given) return refuse("load", given.error);
    const outside = read.plugin.tools.flatMap((t) => (t.working_dir !== undefined && isOutside(t.working_dir) ? [where(t.working_dir)] : []));
    const commands = read.plugin.tools.flatMap((t) => (isOutside(t.command) ? [where(t.command)] : []));
    sandbox = { launcher: given.launcher, policy: callPolicy(given.policy, root, { commands, folders: outside }) };
  }
  const confine = sandbox === null ? undefined : (argv: string[]) => sandboxCall(sandbox!, sandbox!.policy, argv);

  const tools = new Map(read.plugin.tools.map((t) => [t.name, t]));
  const plugin: ModulePlugin = {
    start() {},
    stop() {},
    invoke: async (name, args, call) => {
      const tool = tools.get(name);
      if (!tool) throw new Error(`the plugin has no tool '${name}'`);
      const outcome = await runToolProcess({
        argv: [where(tool.command), ...tool.args],
        cwd: tool.working_dir === undefined ? root : where(tool.working_dir),
        env: envOf(tool),
        input: `${JSON.stringify({ tool: name, input: args })}\n`,
        timeoutMs: tool.timeout_secs === undefined ? null : tool.timeout_secs * 1000,
        maxOutputBytes: tool.max_output_bytes,
        maxMemoryBytes: tool.max_memory_bytes,
        maxCpuSecs: tool.max_cpu_secs,
        signal: call.signal,
        started: (pid) => call.registerChild(pid),
        ...(confine ? { confine } : {}),
      });
      return answerOf(tool, outcome, call);
    },
  };
  const ready = readyLine({ ready: true, contract: checked.manifest.pluginContract, manifest: read.plugin.manifest, exports: [] });
  if ("tooLong" in ready) return refuse("manifest", tooLongText("the manifest from manifest.toml", ready.tooLong));
  shim.writeText(ready.text);
  return serve({ shim, plugin, requestFd, pollMs: settings.pollMs, shown, orphaned: () => { endAllCalls(); rmSync(dir, { recursive: true, force: true }); } });
}

function normalRel(path: string): string {
  return path.split("/").filter((p) => p !== "" && p !== ".").join("/");
}

/** The command's whole environment: inherit_env from this host's, then env. */
function envOf(tool: ProcessTool): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of tool.inherit_env) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...tool.env };
}

/** Which of its limits a signal may mean: the kernel's for RLIMIT_CPU, or what a program does when RLIMIT_AS refuses it memory. */
function limitNote(tool: ProcessTool, signal: string): string {
  if (tool.max_cpu_secs !== undefined && (signal === "SIGXCPU" || signal === "SIGKILL")) return ` (past its max_cpu_secs, ${tool.max_cpu_secs} s of CPU: RLIMIT_CPU)`;
  if (tool.max_memory_bytes !== undefined && (signal === "SIGSEGV" || signal === "SIGABRT" || signal === "SIGBUS")) return ` (perhaps short of memory under its max_memory_bytes, ${tool.max_memory_bytes} bytes: RLIMIT_AS)`;
  return "";
}

const ANSWER = 'a JSON string, or {"output": string, "is_error": boolean}';

/** The call's result from how its process ended; a malformed answer throws, failing the call with what was wrong. */
export function answerOf(tool: ProcessTool, outcome: ToolOutcome, call: Pick<CallContext, "signal">): JobResultInput {
  const who = `tool '${tool.name}' (${tool.command})`;
  const tail = (stderr: Buffer) => {
    const text = stderr.toString("utf8").trim();
    return text ? `; its stderr: ${preview(text)}` : "";
  };
  switch (outcome.end) {
    case "not-started":
      throw new Error(`${who} could not be started: ${outcome.message}`);
    case "cancelled":
      throw call.signal.reason instanceof Error ? call.signal.reason : new Error(`${who} was cancelled`);
    case "timeout":
      throw new Error(`${who} timed out after ${tool.timeout_secs} s (its timeout_secs); its process group was ended${tail(outcome.stderr)}`);
    case "too-much":
      throw new Error(`${who} wrote more than ${tool.max_output_bytes} bytes on stdout and stderr (its max_output_bytes); its process group was ended`);
    case "refused":
      throw new Error(`${who} was not run: ${outcome.why}`);
    case "limit":
      throw new Error(`${who} was not run: its ${outcome.which === "AS" ? `max_memory_bytes (RLIMIT_AS)` : `max_cpu_secs (RLIMIT_CPU)`} could not be set here, and a limit that cannot be applied refuses the call`);
    case "signal":
      throw new Error(`${who} was killed by ${outcome.signal}${limitNote(tool, outcome.signal)}${tail(outcome.stderr)}`);
    case "exited":
      break;
  }
  const refused = launcherRefusal(outcome.status, outcome.stderr.toString("utf8"));
  if (refused) throw new Error(`${who} was not run: its sandbox's ${refused.layer} layer could not be applied (${refused.why}), and a protection that cannot be applied refuses the call`);
  if (outcome.status !== 0) {
    const text = outcome.stderr.toString("utf8").trim();
    return { success: false, exitCode: outcome.status, errorMessage: text || `exited with status ${outcome.status}`, output: { content: "" } };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(outcome.stdout);
  } catch {
    throw new Error(`${who} wrote bytes on stdout that are not UTF-8; it must write ${ANSWER}`);
  }
  if (text.trim() === "") throw new Error(`${who} exited without writing an answer on stdout; it must write ${ANSWER}${tail(outcome.stderr)}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${who} wrote on stdout what is not JSON (${(error as Error).message}): ${preview(text)}; it must write ${ANSWER}`);
  }
  if (typeof value === "string") return { success: true, output: { content: value } };
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const problems = [
      ...(typeof o.output === "string" ? [] : [`"output" is ${o.output === undefined ? "missing" : `not a string (${preview(JSON.stringify(o.output), 40)})`}`]),
      ...(o.is_error === undefined || typeof o.is_error === "boolean" ? [] : ['"is_error" is not a boolean']),
      ...(o.media === undefined || Array.isArray(o.media) ? [] : ['"media" is not an array']),
    ];
    if (problems.length) throw new Error(`${who} answered an object whose ${problems.join(" and ")}; it must write ${ANSWER}`);
    const failed = o.is_error === true;
    const output = { content: o.output as string, ...(Array.isArray(o.media) ? { media: o.media } : {}) };
    return failed ? { success: false, errorMessage: o.output as string, output } : { success: true, output };
  }
  throw new Error(`${who} answered ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}; it must write ${ANSWER}`);
}
