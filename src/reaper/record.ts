/**
 * The session record (SPEC §8): `<state>/sessions/<id>.json` names the session's own process and
 * every process it is responsible for — each plugin host it spawned and each process a plugin
 * registered — by pid and start time, with the process group and session each had when it was
 * recorded, so a later run can end them, and what they left in the groups they made, if this one
 * dies. Every change is written atomically before the caller goes on, and the record is removed
 * once it names nothing: a session that ends cleanly leaves none, and one whose process survived
 * SIGKILL leaves it for the next reap to try again.
 *
 * Records written before `pgid` and `sid` existed are still read: a plugin host has always been
 * spawned in a session of its own (pgid = sid = its pid), and a child without them is treated as
 * one that led no group, so only the process itself is signalled.
 */
import { readdirSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import * as v from "valibot";
import { readJsonStrict, writeJsonAtomic } from "../files.ts";
import { withFileLock } from "../lock.ts";
import type { Owned } from "./ours.ts";
import { startTimeOf } from "./proc.ts";

const Pid = v.pipe(v.number(), v.integer(), v.minValue(1));

export const RecordedProcessSchema = v.strictObject({
  pid: Pid,
  startTime: v.pipe(v.string(), v.regex(/^\d+$/)),
  plugin: v.string(),
  kind: v.picklist(["host", "child"]),
  /** Its process group and session when recorded (the group is ours to signal only if pgid === pid). */
  pgid: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  sid: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
});
export type RecordedProcess = v.InferOutput<typeof RecordedProcessSchema>;

export const SessionRecordSchema = v.strictObject({
  owner: v.strictObject({ pid: Pid, startTime: v.string() }),
  createdAt: v.string(),
  processes: v.array(RecordedProcessSchema),
});
export type SessionRecordData = v.InferOutput<typeof SessionRecordSchema>;

export function sessionsDir(stateDir: string): string {
  return join(stateDir, "sessions");
}

export function recordFiles(stateDir: string): string[] {
  try {
    return readdirSync(sessionsDir(stateDir))
      .filter((f) => f.endsWith(".json") && !f.startsWith("."))
      .sort()
      .map((f) => join(sessionsDir(stateDir), f));
  } catch {
    return [];
  }
}

/** What readJsonStrict answers for a record that is not there. */
const GONE = null as unknown as SessionRecordData;

/** The record at `path`, or null when it is gone: its session removed it since it was listed. */
export function readRecord(path: string): SessionRecordData | null {
  return readJsonStrict(path, SessionRecordSchema, GONE, "session record");
}

/** A recorded process as the reaper sees it (older records filled in, see above). */
export function ownedOf(p: RecordedProcess): Owned {
  if (p.kind === "host" && p.pgid === undefined && p.sid === undefined) return { pid: p.pid, startTime: p.startTime, pgid: p.pid, sid: p.pid };
  return { pid: p.pid, startTime: p.startTime, pgid: p.pgid, sid: p.sid };
}

export class SessionRecord {
  readonly path: string;
  private data: SessionRecordData | null = null;
  /** This process's start time, read once. */
  private readonly startTime: string;

  constructor(stateDir: string) {
    this.startTime = startTimeOf(process.pid) ?? "0";
    this.path = join(sessionsDir(stateDir), `${process.pid}-${this.startTime}-${Math.random().toString(36).slice(2, 8)}.json`);
  }

  get processes(): readonly RecordedProcess[] {
    return this.data?.processes ?? [];
  }

  /** Records a process whose identity the caller has read from /proc (see proveDescent). */
  add(owned: Owned, plugin: string, kind: RecordedProcess["kind"]): void {
    const fresh = this.data ?? {
      owner: { pid: process.pid, startTime: this.startTime },
      createdAt: new Date().toISOString(),
      processes: [],
    };
    const { pid, startTime, pgid, sid } = owned;
    const entry = { pid, startTime, plugin, kind, ...(pgid === undefined ? {} : { pgid }), ...(sid === undefined ? {} : { sid }) };
    this.data = this.update(fresh, (data) => ({ ...data, processes: [...data.processes.filter((p) => p.pid !== pid), entry] }));
  }

  /**
   * Forgets processes verified gone; a record left naming none is removed. When every process it
   * names is gone, the file goes without being read again under the lock: only this session
   * writes it, and reap leaves the record of a live session alone (reap.ts), so the file holds
   * what `data` holds. The lock, the read and the first rmSync made this 530-611 µs in a fresh
   * process, at the end of every one-shot `cxagent invoke`; now 108-112 µs.
   */
  remove(pids: readonly number[]): void {
    if (!this.data || pids.length === 0) return;
    if (this.data.processes.every((p) => pids.includes(p.pid))) {
      removeFile(this.path);
      this.data = null;
      return;
    }
    this.data = this.update(this.data, (data) => {
      const processes = data.processes.filter((p) => !pids.includes(p.pid));
      return processes.length === data.processes.length ? data : processes.length === 0 ? null : { ...data, processes };
    });
  }

  /**
   * Read → modify → rename under the lock all session records share (sessions/.records.lock, one
   * file that is never removed); `fallback` when the record is not there yet. `modify` returns the
   * record unchanged to leave the file alone, or null to remove it (nothing left to reap).
   */
  private update(fallback: SessionRecordData, modify: (data: SessionRecordData) => SessionRecordData | null): SessionRecordData | null {
    return withFileLock(join(dirname(this.path), "records"), () => {
      const current = readJsonStrict(this.path, SessionRecordSchema, fallback, "session record");
      const next = modify(current);
      if (next === null) removeFile(this.path);
      else if (next !== current) writeJsonAtomic(this.path, next);
      return next;
    });
  }
}

/**
 * Removes a file; one already gone is no error. unlinkSync, not rmSync: the first rmSync of a
 * process cost 130-300 µs (its options are checked in JavaScript loaded on first use), the first
 * unlinkSync 46-58 µs (Bun 1.4.5).
 */
function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
