/**
 * What /proc says about a process. A pid alone proves nothing (pids are reused); a pid together
 * with its start time (field 22 of /proc/<pid>/stat, clock ticks since boot) names one process.
 */
import { readdirSync, readFileSync } from "node:fs";

interface Stat {
  pgrp: number;
  startTime: string;
  state: string;
}

function stat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state), so field n is fields[n - 3]
  const startTime = fields[22 - 3];
  const pgrp = Number(fields[5 - 3]);
  if (!startTime) return null;
  return { pgrp, startTime, state: fields[0]! };
}

export function startTimeOf(pid: number): string | null {
  return stat(pid)?.startTime ?? null;
}

export function processGroupOf(pid: number): number | null {
  return stat(pid)?.pgrp ?? null;
}

export type Identity = "same" | "reused" | "gone";

/** Whether the process `pid` that started at `startTime` still exists. A zombie counts as gone. */
export function identify(pid: number, startTime: string): Identity {
  const s = stat(pid);
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

/** Living (not zombie) members of a process group. */
export function groupMembers(pgid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const members: number[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const s = stat(pid);
    if (s && s.pgrp === pgid && s.state !== "Z") members.push(pid);
  }
  return members;
}
