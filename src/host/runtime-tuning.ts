/**
 * The plugin host's own runtime settings, added to the environment the session gives it
 * (session/host-env.ts) when it is spawned, so that a host left idle does no work at all.
 * Measured on Bun 1.4.5, an idle host otherwise woke about 10 s after it started and spent 0.3 to
 * 0.8 ms of CPU (0.12 % of a CPU over 10 s with 32 of them) in two helper threads:
 * JavaScriptCore's block warm-up (JSCWarmUp, which keeps pre-faulted heap blocks ready and frees
 * them after 10 s without demand) and mimalloc's purge (mi-scavenger, which hands freed memory
 * back to the system later, from a thread that wakes to do it).
 *
 * - BUN_JSC_useWarmUpMarkedBlocks=0: a host's JavaScript allocates little once it serves. Bun
 *   refuses to start with a BUN_JSC_ option it does not know, so it is given only where this
 *   runtime (the same executable the host runs) shows it has that thread.
 * - MIMALLOC_PURGE_DELAY=-1, for hosts of native and Cortex plugins only: memory Bun's allocator
 *   frees is kept for reuse (the shim allocates with the C library's malloc, which this does not
 *   touch). A module plugin's host runs the plugin's own JavaScript, which may free much, and
 *   keeps the default. With both, a cold load was no slower: medians of 12 loads, 17.1 and 18.3 ms
 *   against 18.2 and 18.7 ms without (purging at once instead, MIMALLOC_PURGE_DELAY=0, made it
 *   about 2 ms slower: memory handed back during start-up is faulted in again).
 */
import { readdirSync, readFileSync } from "node:fs";
import { type KindProfile, profileOf } from "../kinds/index.ts";
import type { PluginKind } from "../protocol/host-args.ts";

/** `env` over the runtime settings every plugin host gets and those of its kind (KindProfile.runtimeEnv). */
export function withRuntimeTuning(env: Record<string, string>, kind: KindProfile | PluginKind): Record<string, string> {
  tuning ??= threadNames().includes("JSCWarmUp") ? { BUN_JSC_useWarmUpMarkedBlocks: "0" } : undefined;
  return { ...tuning, ...(typeof kind === "string" ? profileOf(kind) : kind).runtimeEnv, ...env };
}

/**
 * Kept once this process has shown the thread. Not finding it proves nothing yet: the runtime
 * starts it some time after its own start (0.38 to 0.55 s in 6 starts of Bun 1.4.5 here, later
 * on a busy machine), so a host spawned before that goes without the setting and the next one
 * asks again (one read of /proc/self/task, on runtimes without the thread at every spawn).
 */
let tuning: Record<string, string> | undefined;

function threadNames(): string[] {
  try {
    return readdirSync("/proc/self/task").map((task) => {
      try {
        return readFileSync(`/proc/self/task/${task}/comm`, "utf8").trim();
      } catch {
        return "";
      }
    });
  } catch {
    return [];
  }
}
