/**
 * Proofs that a process, or a process group, is ours (SPEC §8). Nothing is ever signalled on a
 * pid's word alone: a process is named by pid and start time, and a group is signalled only when
 * we made it.
 *
 * - A registered process is ours when, at registration, it is the plugin host's descendant: its
 *   parent-pid chain reaches the host (each parent older than its child, so a reused pid cannot
 *   splice the chain), or it is in the host's session (the host called setsid, and only its
 *   descendants can be in a session it leads).
 * - Group P is ours when a process we recorded with pid P led its group when it was recorded
 *   (every plugin host does: it is spawned with setsid, so pgid = sid = its pid), and either
 *   - that very process (same start time) still holds pid P: only process P can create group P,
 *     and it has held the pid since; or
 *   - nothing holds pid P, but group P still has members, each in the recorded session and none
 *     older than the recorded leader. Linux does not hand out pid P while any process still has P
 *     as its pid, group or session, so a group P that outlived its leader is that leader's group
 *     unless P was freed and handed out again in between: our group emptied, the pid counter
 *     wrapped around to exactly P (pid_max is 32768 on some systems, 4194304 on most), and the new
 *     holder of P made a session and group of its own and then died, leaving members. That
 *     coincidence is what this proof does not exclude.
 * - Never pid ≤ 1, this process, its ancestors, its own group or its own session.
 */
import { type ProcStat, readStat, startedBefore } from "./proc.ts";

/** A process we are responsible for, as recorded. */
export interface Owned {
  pid: number;
  startTime: string;
  /** Its process group and session when recorded; it led its group if `pgid === pid`. */
  pgid?: number;
  sid?: number;
}

/** This process, its ancestors, its group and its session: never signalled, never ours. */
export interface Lineage {
  pids: ReadonlySet<number>;
  pgid: number;
  sid: number;
}

export function ownLineage(): Lineage {
  const pids = new Set<number>([process.pid]);
  const self = readStat(process.pid);
  let parent = self?.ppid ?? process.ppid;
  for (let hops = 0; parent > 0 && hops < 4096 && !pids.has(parent); hops++) {
    pids.add(parent);
    parent = readStat(parent)?.ppid ?? 0;
  }
  return { pids, pgid: self?.pgid ?? 0, sid: self?.sid ?? 0 };
}

/** Why `pid` must never be signalled by this process, or null. */
export function forbiddenPid(pid: number, lineage: Lineage): string | null {
  if (!Number.isInteger(pid) || pid <= 1) return `pid ${pid} is never a plugin's process`;
  if (pid === process.pid) return `pid ${pid} is this cxagent process itself`;
  if (lineage.pids.has(pid)) return `pid ${pid} is an ancestor of this cxagent process`;
  return null;
}

/** Why process group `pgid` must never be signalled by this process, or null. */
export function forbiddenGroup(pgid: number, lineage: Lineage): string | null {
  if (!Number.isInteger(pgid) || pgid <= 1) return `process group ${pgid} is never a plugin's group`;
  if (pgid === lineage.pgid) return `process group ${pgid} is this cxagent process's own group`;
  if (pgid === lineage.sid) return `process group ${pgid} is this cxagent process's own session`;
  if (lineage.pids.has(pgid)) return `process group ${pgid} belongs to this cxagent process or an ancestor`;
  return null;
}

export type Descent = { ok: true; process: Required<Owned> } | { ok: false; reason: string };

/**
 * Whether `pid` may be recorded as a process the plugin host `host` started: read from /proc now,
 * never from what the plugin said. The parent calls this; the plugin host cannot be trusted with it.
 */
export function proveDescent(pid: number, host: Owned, lineage: Lineage = ownLineage()): Descent {
  const forbidden = forbiddenPid(pid, lineage);
  if (forbidden) return { ok: false, reason: forbidden };
  const hostNow = readStat(host.pid);
  if (!hostNow || hostNow.startTime !== host.startTime) return { ok: false, reason: "the plugin host has already ended" };
  if (pid === host.pid) return { ok: false, reason: "it is the plugin host itself, which is recorded already" };
  const s = readStat(pid);
  if (!s) return { ok: false, reason: "there is no such process (it may have exited already)" };
  if (s.state === "Z") return { ok: false, reason: "it has already exited" };
  const owned = { pid, startTime: s.startTime, pgid: s.pgid, sid: s.sid };
  // In the host's session: a descendant, even when a parent between them has exited since.
  if (host.sid === host.pid && s.sid === host.pid) return { ok: true, process: owned };
  let child: ProcStat = s;
  for (let hops = 0; hops < 4096; hops++) {
    if (child.ppid === host.pid) {
      return startedBefore(child.startTime, host.startTime)
        ? { ok: false, reason: "it is not a descendant of the plugin host" }
        : { ok: true, process: owned };
    }
    if (child.ppid <= 1 || lineage.pids.has(child.ppid)) break;
    const parent = readStat(child.ppid);
    // A parent younger than its child holds a reused pid: the chain is broken there.
    if (!parent || startedBefore(child.startTime, parent.startTime)) break;
    child = parent;
  }
  return { ok: false, reason: `it is not a descendant of the plugin host (pid ${host.pid})` };
}

/**
 * The members of the process group `owned` made, when that group is provably ours (see the file
 * comment); null when it is not, or when it has no living member. Zombies are not members.
 */
export function provenGroup(owned: Owned, lineage: Lineage, table: ReadonlyMap<number, ProcStat>): ProcStat[] | null {
  const pgid = owned.pgid;
  if (pgid !== owned.pid || forbiddenGroup(pgid, lineage)) return null;
  const members: ProcStat[] = [];
  for (const p of table.values()) if (p.pgid === pgid && p.state !== "Z") members.push(p);
  if (members.length === 0) return null;
  if (members.some((m) => lineage.pids.has(m.pid))) return null;
  const holder = table.get(owned.pid);
  if (holder) return holder.startTime === owned.startTime ? members : null;
  const sid = owned.sid ?? -1;
  return members.every((m) => m.sid === sid && !startedBefore(m.startTime, owned.startTime)) ? members : null;
}

