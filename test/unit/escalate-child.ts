/**
 * Run by escalate-edges.test.ts, under strace or in a private pid namespace: ends the targets
 * given as JSON (argv[2]: { targets, options }; a pid "self" or "parent" is this process or its
 * parent, a start time "real" the one /proc shows) between two markers strace sees, kill(2147483646, 0) before and kill(2147483645, 0)
 * after (no process has those pids), and prints the endings as JSON. argv[3], when given, is the
 * folder to import escalate.ts from (a copy another user may read).
 */
import { join } from "node:path";
import type { EndOptions } from "../../src/reaper/escalate.ts";
import type { Owned } from "../../src/reaper/ours.ts";

const { targets, options } = JSON.parse(process.argv[2]!) as { targets: (Omit<Owned, "pid"> & { pid: number | "self" | "parent" })[]; options: EndOptions };
const from = process.argv[3] ?? join(import.meta.dir, "../../src/reaper");
const { endProcesses } = (await import(join(from, "escalate.ts"))) as typeof import("../../src/reaper/escalate.ts");
const { startTimeOf } = (await import(join(from, "proc.ts"))) as typeof import("../../src/reaper/proc.ts");
const pidOf = (pid: number | "self" | "parent") => (pid === "self" ? process.pid : pid === "parent" ? process.ppid : pid);
const marker = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    // no such process: the marker is the call itself
  }
};
const owned = targets.map((t) => ({ ...t, pid: pidOf(t.pid), startTime: t.startTime === "real" ? (startTimeOf(pidOf(t.pid)) ?? "1") : t.startTime }));
marker(2147483646);
const endings = await endProcesses(owned, options);
marker(2147483645);
console.log(JSON.stringify(endings));
