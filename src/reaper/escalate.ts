/**
 * The one way cxagent ends processes, for a live session (a plugin host and what it registered)
 * and for `reap` alike: SIGTERM, a grace period, SIGKILL, then a check that everything is gone.
 * Before every signal the proof is read again from /proc (see ours.ts): a process only while its
 * pid still has the recorded start time, a group only while it is provably the one we made.
 */
import { forbiddenPid, type Lineage, type Owned, ownLineage, provenGroup } from "./ours.ts";
import { groupMayHaveMembers, identify, type Identity, processMayExist, processTable } from "./proc.ts";

/**
 * What became of a process: `ended` once it is verified gone after we set out to end it;
 * `still-running` when it survived SIGKILL (a process in uninterruptible sleep, or one we may not
 * signal); `would-end` in a dry run; `gone` when it had ended before; `reused` when its pid now
 * belongs to another process, which is left alone.
 */
export type Outcome = "ended" | "still-running" | "would-end" | "gone" | "reused";

export interface Ending {
  target: Owned;
  outcome: Outcome;
  /** Other processes found in the group the target made: unregistered, but ours all the same. */
  members: { pid: number; startTime: string; outcome: Extract<Outcome, "ended" | "still-running" | "would-end"> }[];
}

export interface EndOptions {
  /** How long SIGTERM has before SIGKILL follows; 0 sends SIGKILL at once. */
  graceMs: number;
  /** How long SIGKILL has to take effect before a survivor is reported (default 1 s). */
  verifyMs?: number;
  /** Find what would be ended, and signal nothing. */
  dryRun?: boolean;
}

interface Tracked {
  target: Owned;
  initial: Identity;
  members: Map<number, string>;
}

/** Whether anything of `target` may still be there, asked of the kernel (cheap) before /proc is read. */
const mayRemain = (target: Owned) => processMayExist(target.pid) || (target.pgid === target.pid && groupMayHaveMembers(target.pid));

/** Signals what is still ours; returns how many targets still have a living process or group. */
function sweep(tracked: readonly Tracked[], lineage: Lineage, signal: NodeJS.Signals | null): number {
  // Reading /proc costs about 1 ms per 100 processes on the machine; when the kernel says every
  // pid and every group we made is gone, there is nothing to look for.
  if (!tracked.some((t) => mayRemain(t.target))) return 0;
  const table = processTable();
  let living = 0;
  for (const t of tracked) {
    if (forbiddenPid(t.target.pid, lineage)) continue;
    const s = table.get(t.target.pid);
    const self = s !== undefined && s.state !== "Z" && s.startTime === t.target.startTime;
    const group = provenGroup(t.target, lineage, table);
    for (const m of group ?? []) if (m.pid !== t.target.pid) t.members.set(m.pid, m.startTime);
    if (!self && !group) continue;
    living++;
    if (signal === null) continue;
    try {
      if (group) process.kill(-t.target.pid, signal);
      if (self && !group?.some((m) => m.pid === t.target.pid)) process.kill(t.target.pid, signal);
    } catch {
      // it ended between the look and the signal
    }
  }
  return living;
}

async function settle(tracked: readonly Tracked[], lineage: Lineage, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  let pause = 5;
  while (sweep(tracked, lineage, null) > 0 && performance.now() < deadline) {
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 50);
  }
}

/** No ancestry: forbiddenPid then refuses only what is never a plugin's (pid 0, 1, this process). */
const NO_LINEAGE: Lineage = { pids: new Set(), pgid: 0, sid: 0 };

/** Ends the targets and whatever is in the groups they made; resolves with what became of each. */
export async function endProcesses(targets: readonly Owned[], options: EndOptions): Promise<Ending[]> {
  // The usual case, a host that exited on stop: the kernel says no target and no group it made is
  // there, so nothing could be signalled, and neither the ancestry nor /proc needs reading (a
  // /proc read per ancestor, about 0.5 ms at the end of every one-shot invoke). This process and
  // its ancestors are alive, so they never take this path; pids 0 and 1 are dropped as below.
  if (!targets.some(mayRemain)) return targets.filter((t) => !forbiddenPid(t.pid, NO_LINEAGE)).map((target) => ({ target, outcome: "gone", members: [] }));
  const lineage = ownLineage();
  const tracked: Tracked[] = targets
    .filter((target) => !forbiddenPid(target.pid, lineage))
    .map((target) => ({ target, initial: identify(target.pid, target.startTime), members: new Map() }));
  const living = sweep(tracked, lineage, null);
  if (living > 0 && !options.dryRun) {
    if (options.graceMs > 0) {
      sweep(tracked, lineage, "SIGTERM");
      await settle(tracked, lineage, options.graceMs);
    }
    if (sweep(tracked, lineage, "SIGKILL") > 0) await settle(tracked, lineage, options.verifyMs ?? 1000);
  }
  const recorded = new Set(targets.map((t) => t.pid));
  return tracked.map((t) => {
    const running = (pid: number, startTime: string) => identify(pid, startTime) === "same";
    const fate = (pid: number, startTime: string): Ending["members"][number]["outcome"] =>
      options.dryRun ? "would-end" : running(pid, startTime) ? "still-running" : "ended";
    const outcome: Outcome = t.initial === "same" ? fate(t.target.pid, t.target.startTime) : t.initial;
    const members = [...t.members].filter(([pid]) => !recorded.has(pid)).map(([pid, startTime]) => ({ pid, startTime, outcome: fate(pid, startTime) }));
    return { target: t.target, outcome, members };
  });
}

/** The targets an ending leaves nothing of: safe to forget. */
export function finished(endings: readonly Ending[]): number[] {
  return endings
    .filter((e) => e.outcome !== "still-running" && e.outcome !== "would-end" && e.members.every((m) => m.outcome === "ended"))
    .map((e) => e.target.pid);
}
