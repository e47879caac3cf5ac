/**
 * Which limit of its sandbox stopped a host (issue 39 point 5), decided from what the kernel says
 * about the host, never from what it printed: its pids cgroup's events for `processes` (the
 * cgroup counted a refused fork), and for `memory` how it died together with the address-space
 * rlimit that was really in force (read from /proc/<pid>/limits while it ran). RLIMIT_AS makes an
 * allocation fail (mmap and brk answer ENOMEM; nothing is counted anywhere), and a process whose
 * allocation failed ends by abort (SIGABRT: xmalloc, Rust's handle_alloc_error, C++'s bad_alloc
 * unhandled), by using the NULL it got (SIGSEGV, SIGBUS) or by the runtime's own crash on it
 * (SIGTRAP, SIGILL). An ordinary exit, whatever it printed, and a kill (SIGKILL, SIGTERM: the
 * parent's own, or the machine's) are not the memory limit. This machine's cgroup v2 has no memory
 * controller, and the launcher makes no memory cgroup, so no cgroup counts memory events here.
 */
import { readFileSync } from "node:fs";
import type { SandboxPolicy } from "../protocol/sandbox-policy.ts";

/** The signals a process ends by when an allocation failed. */
export const ALLOCATION_SIGNALS: readonly string[] = ["SIGABRT", "SIGSEGV", "SIGBUS", "SIGTRAP", "SIGILL"];

export interface LimitFacts {
  exit: { code: number | null; signal: string | null };
  policy: Pick<SandboxPolicy, "memoryMiB" | "processes">;
  /** Its pids cgroup counted a refused fork (pids.events "max" above 0). */
  forkRefused: boolean;
  /** The soft RLIMIT_AS in force while it ran, in bytes (null: none, or it was not read). */
  addressSpace: number | null;
}

export interface LimitCause {
  limit: "processes" | "memory";
  value: string;
  /** What the kernel said, in words: the evidence. */
  how: string;
}

export function limitCause(f: LimitFacts): LimitCause | null {
  if (f.exit.code === 0 && f.exit.signal === null) return null;
  if (f.forkRefused && f.policy.processes !== undefined) {
    return { limit: "processes", value: String(f.policy.processes), how: "its pids cgroup refused a fork (pids.events: max)" };
  }
  if (f.policy.memoryMiB !== undefined && f.addressSpace !== null && f.exit.signal !== null && ALLOCATION_SIGNALS.includes(f.exit.signal)) {
    return { limit: "memory", value: `${f.policy.memoryMiB} MiB`, how: `it ended by ${f.exit.signal} under an address-space rlimit (RLIMIT_AS) of ${Math.round(f.addressSpace / 2 ** 20)} MiB` };
  }
  return null;
}

/** The soft RLIMIT_AS of process `pid` in bytes, from /proc/<pid>/limits; null when unlimited or unreadable. */
export function addressSpaceOf(pid: number): number | null {
  try {
    const soft = /^Max address space\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"))?.[1];
    return soft === undefined || soft === "unlimited" ? null : Number(soft);
  } catch {
    return null;
  }
}
