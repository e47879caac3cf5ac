/**
 * What /proc says about a process. A pid alone proves nothing (pids are reused); a pid together
 * with its start time (field 22 of /proc/<pid>/stat, clock ticks since boot) names one process.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  pid: number;
  /** R, S, D, Z, T, ...; Z is a zombie: it has ended and only waits to be collected. */
  state: string;
  ppid: number;
  pgid: number;
  sid: number;
  startTime: string;
}

export function readStat(pid: number): ProcStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  // fields[0] is field 3 (state), so field n is fields[n - 3].
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const startTime = fields[22 - 3];
  if (!startTime || !/^\d+$/.test(startTime)) return null;
  return { pid, state: fields[0]!, ppid: Number(fields[4 - 3]), pgid: Number(fields[5 - 3]), sid: Number(fields[6 - 3]), startTime };
}

export function startTimeOf(pid: number): string | null {
  return readStat(pid)?.startTime ?? null;
}

/** Start times compare as numbers (they outgrow 2^53 only after ~900 years of uptime at 100 Hz, but BigInt costs nothing here). */
export function startedBefore(a: string, b: string): boolean {
  return BigInt(a) < BigInt(b);
}

export type Identity = "same" | "reused" | "gone";

/** Whether the process `pid` that started at `startTime` still exists. A zombie counts as gone. */
export function identify(pid: number, startTime: string): Identity {
  const s = readStat(pid);
  if (!s || s.state === "Z") return "gone";
  return s.startTime === startTime ? "same" : "reused";
}

/**
 * Whether a process group may have members: false only when the kernel says it has none, from one
 * kill(2) with signal 0 (nothing is delivered) instead of reading /proc for every process on the
 * machine, which groupMembers does. A group holding only zombies counts as maybe here. Groups 0
 * and 1 are never asked about: kill(0) and kill(-1) mean other things.
 */
export function groupMayHaveMembers(pgid: number): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Whether a process may exist: false only when kill(2) with signal 0 says it does not (never asked of pid ≤ 1). */
export function processMayExist(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 1) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Every process /proc shows (zombies included), by pid. */
export function processTable(): Map<number, ProcStat> {
  const table = new Map<number, ProcStat>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return table;
  }
  // A name that is not a pid (self, net, ...) is NaN here, which readStat refuses before reading.
  for (const entry of entries) {
    const pid = Number(entry);
    const s = readStat(pid);
    if (s) table.set(pid, s);
  }
  return table;
}
