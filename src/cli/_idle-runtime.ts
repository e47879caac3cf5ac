/**
 * `cxagent mcp` lives as long as its client and is idle most of that time, so it starts itself
 * again, once, before anything else, with the runtime settings under which an idle Bun does no
 * work (issue 42 point 2: idle CPU). Measured on Bun 1.4.5 with 10 plugins served, `perf stat` on
 * the server process over 20 s idle: see RUNTIME_ENV. The environment can be given only at a
 * process's start, hence the execve: same pid, same descriptors (its client's pipes), nothing read
 * yet. Where execve fails, the server runs as it is (untuned, not broken); CXAGENT_IDLE_RUNTIME=0
 * turns the restart off. Plugin hosts never see these variables: their environment is an
 * allow-list (session/host-env.ts), and they get their own tuning (host/runtime-tuning.ts).
 */
/**
 * Measured with 10 native plugins served and called once, `perf stat -e task-clock` on the server
 * process over 20 s idle, 3 rounds on a busy 2-CPU machine: 24.9, 24.4, 23.6 ms as started; with
 * BUN_GC_TIMER_DISABLE alone 12.1, 3.7 ms; with both below 3.2, 3.1 ms (≤ 0.016 % of a CPU).
 *
 * - BUN_GC_TIMER_DISABLE=1: Bun's own collection timer read /proc/self/statm and woke threads
 *   every second, whether or not anything was allocated; JavaScriptCore's own collector still
 *   runs when the server allocates.
 * - BUN_JSC_useWarmUpMarkedBlocks=0: JavaScriptCore's block warm-up thread, as for plugin hosts
 *   (host/runtime-tuning.ts). Bun refuses to start with a BUN_JSC_ option it does not know, and the
 *   thread is not there yet this early to be looked for, so it is given only on the runtime line it
 *   was measured on (1.4), which is the one the compiled binary carries.
 * MIMALLOC_PURGE_DELAY=-1, which hosts of native plugins get, is left out: the server allocates
 * for every answer it relays, and would keep the memory of its largest one for good.
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = {
  BUN_GC_TIMER_DISABLE: "1",
  ...(Bun.version.startsWith("1.4.") ? { BUN_JSC_useWarmUpMarkedBlocks: "0" } : {}),
};
/** Set in the restarted process: it is not restarted again. */
const MARK = "CXAGENT_IDLE_RUNTIME";

/**
 * The command that starts this process again with RUNTIME_ENV, or null where it must not be (the
 * restarted one, or not Linux). main.ts carries it out with sandbox/kernel.ts's execve.
 */
export function idleRestart(args: readonly string[], compiled: boolean): { argv: string[]; env: Record<string, string> } | null {
  if (process.env[MARK] !== undefined || process.platform !== "linux") return null;
  // A compiled binary is its own program; from source, Bun runs the entry file again.
  const argv = compiled ? [process.execPath, ...args] : [process.execPath, Bun.main, ...args];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { argv, env: { ...env, ...RUNTIME_ENV, [MARK]: "1" } };
}
