/**
 * A plugin host in check mode, as `cxagent check` drives it: its own connection (host/connection.ts)
 * to the plugin host, not a session's Plugin, so each request reaches the plugin exactly as sent —
 * arguments of the wrong type, a stop with no start — with no schema validation, gating or tool
 * policy in between. What the host and the plugin do is collected in one Observations for every
 * host of a check, for the checks that judge the whole run.
 */
import { readFileSync } from "node:fs";
import { type CxError, isCxError } from "../errors.ts";
import type { Connection, ProcessHooks } from "../host/connection.ts";
import type { Owned } from "../reaper/ours.ts";
import { processTable } from "../reaper/proc.ts";
import { CONTRACT_CURRENT } from "../protocol/manifest.ts";
import type { CheckEvent, Reply, StartupLine } from "../protocol/wire.ts";

export type Ready = Extract<StartupLine, { ready: true }>;

/** What a request came to: a reply (ok or not), or an error (a crash, a deadline, a refusal). */
export type Answer = { kind: "reply"; reply: Reply; ms: number } | { kind: "error"; error: CxError; ms: number };

/** A process found in a plugin host's subtree. */
export interface SeenProcess {
  pid: number;
  ppid: number;
  startTime: string;
  name: string;
  /** Still in the plugin host's process group when seen. */
  inGroup: boolean;
  zombie: boolean;
}

export interface Observations {
  /** Every string an export returned, as the host released it (check events "returned"). */
  returned: CheckEvent[];
  /** Host-table misuse (check events "host-table"). */
  misuse: CheckEvent[];
  /** Buffers a Cortex plugin was lent and freed (check events "lent"). */
  lent: CheckEvent[];
  /** Log reports with no call, and the host's own messages. */
  logs: { level: number; text: string }[];
  /** What the plugins wrote to stdout and stderr, the last lines. */
  output: string[];
  submits: { goal?: unknown; wantResult?: unknown }[];
  /** Registrations proven to be the host's descendants. */
  registered: Owned[];
  /** Processes in a host's subtree, by pid. */
  processes: Map<number, SeenProcess>;
  /** Hosts that waited for children of their own (their cminflt grew): processes started and collected. */
  waitedFor: Set<number>;
}

export function newObservations(): Observations {
  return { returned: [], misuse: [], lent: [], logs: [], output: [], submits: [], registered: [], processes: new Map(), waitedFor: new Set() };
}

/** Spawns a plugin host in check mode with these hooks (the runner knows the plugin). */
export type SpawnCheckHost = (hooks: ProcessHooks) => Promise<{ connection: Connection; ready: Ready }>;

export class CheckHost {
  readonly ready: Ready;
  private readonly connection: Connection;
  private readonly seen: Observations;
  private closed = false;

  private constructor(connection: Connection, ready: Ready, seen: Observations) {
    this.connection = connection;
    this.ready = ready;
    this.seen = seen;
  }

  /** Spawns a plugin host in check mode; the refusal (load, exports, handshake, manifest, crash) when it does not become ready. */
  static async open(spawn: SpawnCheckHost, seen: Observations): Promise<CheckHost | CxError> {
    try {
      const { connection, ready } = await spawn({
        onCheck: (event) => (event.what === "returned" ? seen.returned : event.what === "lent" ? seen.lent : seen.misuse).push(event),
        onLog: (level, text) => seen.logs.push({ level, text }),
        onOutput: (text) => {
          seen.output.push(text);
          if (seen.output.length > 200) seen.output.shift();
        },
        onSubmit: ({ goal, wantResult }) => seen.submits.push({ goal, wantResult }),
        onChild: (child) => seen.registered.push(child),
      });
      return new CheckHost(connection, ready, seen);
    } catch (error) {
      if (isCxError(error)) return error;
      throw error;
    }
  }

  get alive(): boolean {
    return this.connection.alive;
  }

  get pid(): number | null {
    return this.connection.pid;
  }

  async request(body: Parameters<Connection["request"]>[0], timeoutMs: number): Promise<Answer> {
    const began = performance.now();
    try {
      const reply = await this.connection.request(body, { timeoutMs });
      return { kind: "reply", reply, ms: performance.now() - began };
    } catch (error) {
      if (!isCxError(error)) throw error;
      return { kind: "error", error, ms: performance.now() - began };
    }
  }

  start(settings: unknown, workingDirectory: string, timeoutMs: number): Promise<Answer> {
    return this.request({ kind: "start", context: { workingDirectory, settings, hostContract: CONTRACT_CURRENT } }, timeoutMs);
  }

  /** Records the processes in this host's subtree, and whether it has waited for children. */
  sample(): void {
    const pid = this.connection.pid;
    if (pid === null || !this.alive) return;
    const table = processTable();
    const host = table.get(pid);
    if (!host) return;
    const children = new Map<number, number[]>();
    for (const s of table.values()) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s.pid]);
    const queue = [...(children.get(pid) ?? [])];
    while (queue.length) {
      const p = queue.shift()!;
      const s = table.get(p);
      if (!s) continue;
      queue.push(...(children.get(p) ?? []));
      const known = this.seen.processes.get(p);
      if (!known || known.startTime !== s.startTime) {
        this.seen.processes.set(p, { pid: p, ppid: s.ppid, startTime: s.startTime, name: commOf(p), inGroup: s.pgid === host.pgid, zombie: s.state === "Z" });
      } else {
        // Seen again: between fork and exec it still bore the host's name; now it may have its own.
        known.name = commOf(p);
        known.zombie = s.state === "Z";
        known.inGroup &&= s.pgid === host.pgid;
      }
    }
    if (waitedForChildren(pid)) this.seen.waitedFor.add(pid);
  }

  /** Stops it (when asked: the stop request and its answer), then ends the process. */
  async close(stop: boolean, stopMs = 10_000): Promise<Answer | null> {
    if (this.closed) return null;
    this.closed = true;
    let answer: Answer | null = null;
    if (stop && this.alive) {
      answer = await this.request({ kind: "stop" }, stopMs);
      this.sample();
    }
    await this.connection.shutdown({ sendStop: false, graceMs: 1000 });
    return answer;
  }
}

/** The process's name from /proc (its comm), for messages. */
function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "?";
  }
}

/** Field 11 of /proc/<pid>/stat, cminflt: page faults of children it waited for, so non-zero once it has collected one. */
function waitedForChildren(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11 - 3]) > 0;
  } catch {
    return false;
  }
}
