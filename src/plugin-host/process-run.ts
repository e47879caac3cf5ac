/**
 * One call of a Cortex process tool: one process, started by the one function that starts them
 * (`runToolProcess`), so that a sandbox can wrap it (`launchArgv` is the command line it runs).
 *
 * - Its environment is exactly the tool's inherit_env (from the plugin host's) and env.
 * - max_memory_bytes and max_cpu_secs become RLIMIT_AS and RLIMIT_CPU, set by /bin/sh's ulimit
 *   before it execs the command (Bun starts processes without a hook between fork and exec); a
 *   limit that cannot be set refuses the call, naming it.
 * - It is a process group of its own (setsid), recorded with the parent as the plugin's child
 *   before its stdin is written; the whole group is ended (SIGKILL) at its timeout, on cancel, on
 *   output past max_output_bytes, and when the call ends, so nothing it started outlives the call.
 * - stdout and stderr are read as they come (no pipe can fill and stall it), and counted together.
 * - Under a sandbox (`confine`, process-sandbox.ts) the sandbox launcher starts it: the launcher
 *   confines itself, then execs the command line above (the limits' shell, then the command).
 */
import { spawn } from "node:child_process";

/** The exit status the wrapper gives when it could not set a limit (with a line on stderr naming it). */
const LIMIT_STATUS = 125;
const LIMIT_MARK = "cxagent-rlimit:";
/** How long, after the command exited, its pipes may stay open (held by what it started) before its group is ended. */
const DRAIN_MS = 200;

export interface ToolProcess {
  /** The command (an absolute path) and its arguments. */
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** What is written on its stdin, which is then closed. */
  input: string;
  timeoutMs: number | null;
  maxOutputBytes: number;
  maxMemoryBytes?: number;
  maxCpuSecs?: number;
  signal: AbortSignal;
  /** Called with its pid once it runs (the plugin host records it with the parent). */
  started(pid: number): Promise<void> | void;
  /** The command line through the sandbox launcher, and what to clean up once the process ended; a refusal throws. */
  confine?: (argv: string[]) => { command: string[]; ended(pid: number, exit: { code: number | null; signal: string | null }, stderr: readonly string[]): unknown };
}

export type ToolOutcome =
  | { end: "exited"; status: number; stdout: Buffer; stderr: Buffer }
  | { end: "signal"; signal: string; stderr: Buffer }
  | { end: "timeout"; stderr: Buffer }
  | { end: "cancelled" }
  | { end: "too-much"; bytes: number }
  | { end: "limit"; which: string; stderr: Buffer }
  | { end: "refused"; why: string }
  | { end: "not-started"; message: string };

/** The process groups of calls still running: ended with the plugin host, whatever ends it. */
const live = new Set<number>();

/** Ends every call's process group still running (the plugin host is ending). */
export function endAllCalls(): void {
  for (const pgid of live) endGroup(pgid);
  live.clear();
}

/** Ends the process group `pgid` with SIGKILL; never group 0 or 1 or this host's own (exported for its test). */
export function endGroup(pgid: number) {
  // A group id is its leader's pid: never 0 or 1, and never this host's own group.
  if (pgid <= 1 || pgid === process.pid) return;
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** The command line a call runs: its limits set by the shell, which then execs the command itself. */
export function launchArgv(call: Pick<ToolProcess, "argv" | "maxMemoryBytes" | "maxCpuSecs">): string[] {
  const limits: string[] = [];
  // ulimit -v counts KiB; a limit that is not a whole KiB is rounded down (at least 1).
  if (call.maxMemoryBytes !== undefined) limits.push(`ulimit -v ${Math.max(1, Math.floor(call.maxMemoryBytes / 1024))} 2>/dev/null || { echo ${LIMIT_MARK}AS >&2; exit ${LIMIT_STATUS}; }`);
  // SIGXCPU at the soft limit, SIGKILL a second later at the hard one (as the kernel does for RLIMIT_CPU).
  if (call.maxCpuSecs !== undefined) limits.push(`{ ulimit -S -t ${call.maxCpuSecs} && ulimit -H -t ${call.maxCpuSecs + 1}; } 2>/dev/null || { echo ${LIMIT_MARK}CPU >&2; exit ${LIMIT_STATUS}; }`);
  if (limits.length === 0) return call.argv;
  return ["/bin/sh", "-c", `${limits.join("; ")}; exec "$@"`, "cxagent-tool", ...call.argv];
}

export function runToolProcess(call: ToolProcess): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    if (call.signal.aborted) return resolve({ end: "cancelled" });
    let argv = launchArgv(call);
    let confined: ReturnType<NonNullable<ToolProcess["confine"]>> | null = null;
    try {
      confined = call.confine ? call.confine(argv) : null;
    } catch (error) {
      return resolve({ end: "refused", why: (error as Error).message });
    }
    if (confined) argv = confined.command;
    let child;
    try {
      child = spawn(argv[0]!, argv.slice(1), { cwd: call.cwd, env: call.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    } catch (error) {
      return resolve({ end: "not-started", message: (error as Error).message });
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let bytes = 0;
    let outcome: ToolOutcome | null = null;
    let exit: { status: number | null; signal: NodeJS.Signals | null } | null = null;
    let drain: ReturnType<typeof setTimeout> | null = null;
    const pid = child.pid;
    const end = (why: ToolOutcome) => {
      outcome ??= why;
      if (pid !== undefined) endGroup(pid);
    };
    const timer = call.timeoutMs === null ? null : setTimeout(() => end({ end: "timeout", stderr: Buffer.concat(stderr) }), call.timeoutMs);
    const onAbort = () => end({ end: "cancelled" });
    call.signal.addEventListener("abort", onAbort, { once: true });
    const take = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > call.maxOutputBytes) return end({ end: "too-much", bytes });
      if (outcome === null) into.push(chunk);
    };
    child.stdout!.on("data", take(stdout));
    child.stderr!.on("data", take(stderr));
    child.stdin!.on("error", () => {}); // a command that reads nothing closes its end: EPIPE is its choice
    child.on("error", (error) => {
      if (pid === undefined) settle({ end: "not-started", message: error.message });
    });
    child.on("exit", (status, signal) => {
      exit = { status, signal };
      // What it started may hold its pipes open: they get a moment, then its group is ended.
      drain = setTimeout(() => pid !== undefined && endGroup(pid), DRAIN_MS);
    });
    child.on("close", () => {
      if (pid !== undefined) endGroup(pid);
      const err = Buffer.concat(stderr);
      if (confined && pid !== undefined) confined.ended(pid, { code: exit?.status ?? null, signal: exit?.signal ?? null }, err.toString("utf8").split("\n"));
      if (outcome) return settle(outcome);
      if (exit?.signal) return settle({ end: "signal", signal: exit.signal, stderr: err });
      const status = exit?.status ?? 0;
      const mark = status === LIMIT_STATUS ? new RegExp(`${LIMIT_MARK}(\\w+)`).exec(err.toString("utf8")) : null;
      if (mark) return settle({ end: "limit", which: mark[1]!, stderr: err });
      settle({ end: "exited", status, stdout: Buffer.concat(stdout), stderr: err });
    });
    function settle(result: ToolOutcome) {
      if (timer) clearTimeout(timer);
      if (drain) clearTimeout(drain);
      call.signal.removeEventListener("abort", onAbort);
      if (pid !== undefined) live.delete(pid);
      resolve(result);
    }
    if (pid === undefined) return;
    live.add(pid);
    void (async () => {
      try {
        await call.started(pid);
      } catch {
        // the parent logs a refused record; the call goes on, its group still ended with it
      }
      child.stdin!.end(call.input);
    })();
  });
}
