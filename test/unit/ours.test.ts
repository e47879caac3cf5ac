/**
 * The proofs that a process or a group is ours (SPEC §8), as pure functions of a lineage and a
 * process table: what they refuse is refused whatever called them. The same rules through real
 * processes are in test/integration/reap.test.ts and registration.test.ts; endProcesses, which acts
 * on them, is at the end here with real children.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { forbiddenGroup, forbiddenPid, type Lineage, ownLineage, type Owned, proveDescent, provenGroup } from "../../src/reaper/ours.ts";
import { endProcesses } from "../../src/reaper/escalate.ts";
import { type ProcStat, readStat, startTimeOf } from "../../src/reaper/proc.ts";

/** This process (its real pid), its parent 50 and grandparent 40; its group 70, its session 60. */
const lineage: Lineage = { pids: new Set([process.pid, 50, 40]), pgid: 70, sid: 60 };

const proc = (pid: number, fields: Partial<ProcStat> = {}): ProcStat => ({ pid, state: "S", ppid: 900, pgid: pid, sid: pid, startTime: "1000", ...fields });
const table = (...procs: ProcStat[]) => new Map(procs.map((p) => [p.pid, p]));

describe("never signalled, whatever asks", () => {
  test("pid 1, 0 and below, and what is not a whole number", () => {
    for (const pid of [1, 0, -1, -300, 1.5, Number.NaN]) expect(forbiddenPid(pid, lineage)).toBe(`pid ${pid} is never a plugin's process`);
  });

  test("this process and its ancestors", () => {
    expect(forbiddenPid(process.pid, lineage)).toBe(`pid ${process.pid} is this cxagent process itself`);
    expect(forbiddenPid(50, lineage)).toBe("pid 50 is an ancestor of this cxagent process");
    expect(forbiddenPid(40, lineage)).toBe("pid 40 is an ancestor of this cxagent process");
    expect(forbiddenPid(300, lineage)).toBeNull();
  });

  test("group 1 (kill(-1)), 0 (kill(0)) and below, this process's own group and session, and its ancestors' groups", () => {
    for (const pgid of [1, 0, -1, 2.5]) expect(forbiddenGroup(pgid, lineage)).toBe(`process group ${pgid} is never a plugin's group`);
    expect(forbiddenGroup(70, lineage)).toBe("process group 70 is this cxagent process's own group");
    expect(forbiddenGroup(60, lineage)).toBe("process group 60 is this cxagent process's own session");
    expect(forbiddenGroup(50, lineage)).toBe("process group 50 belongs to this cxagent process or an ancestor");
    expect(forbiddenGroup(300, lineage)).toBeNull();
  });
});

describe("a group is ours only while it is provably the one we made", () => {
  const host: Owned = { pid: 300, startTime: "1000", pgid: 300, sid: 300 };
  const members = (found: ProcStat[] | null) => found?.map((p) => p.pid) ?? null;

  test("its leader still holds the pid: every living member, zombies left out", () => {
    const t = table(proc(300), proc(301, { pgid: 300, sid: 300, startTime: "1001" }), proc(302, { pgid: 300, sid: 300, state: "Z" }), proc(303));
    expect(members(provenGroup(host, lineage, t))).toEqual([300, 301]);
  });

  test("another process holds the leader's pid now: not ours", () => {
    const t = table(proc(300, { startTime: "2000" }), proc(301, { pgid: 300, sid: 300, startTime: "2001" }));
    expect(provenGroup(host, lineage, t)).toBeNull();
  });

  test("the leader is gone: ours while every member is in the recorded session and no older than the leader", () => {
    expect(members(provenGroup(host, lineage, table(proc(301, { pgid: 300, sid: 300, startTime: "1001" }))))).toEqual([301]);
    expect(provenGroup(host, lineage, table(proc(301, { pgid: 300, sid: 300, startTime: "999" })))).toBeNull();
    expect(provenGroup(host, lineage, table(proc(301, { pgid: 300, sid: 555, startTime: "1001" })))).toBeNull();
  });

  test("the leader is gone: one member outside the recorded session, or older than the leader, and the group is not ours", () => {
    const inSession = proc(301, { pgid: 300, sid: 300, startTime: "1001" });
    expect(provenGroup(host, lineage, table(inSession, proc(302, { pgid: 300, sid: 555, startTime: "1001" })))).toBeNull();
    expect(provenGroup(host, lineage, table(inSession, proc(302, { pgid: 300, sid: 300, startTime: "999" })))).toBeNull();
  });

  test("the leader is gone and its session was not recorded: no session matches, not even 1", () => {
    const { sid: _sid, ...noSession } = host;
    expect(provenGroup(noSession, lineage, table(proc(301, { pgid: 300, sid: 1, startTime: "1001" })))).toBeNull();
  });

  test("a process that did not lead its group when recorded made no group", () => {
    const child: Owned = { pid: 301, startTime: "1001", pgid: 300, sid: 300 };
    expect(provenGroup(child, lineage, table(proc(300), proc(301, { pgid: 300, sid: 300, startTime: "1001" })))).toBeNull();
  });

  test("a group with this process or an ancestor in it, or one that is forbidden, is never ours", () => {
    expect(provenGroup(host, lineage, table(proc(300), proc(50, { pgid: 300, sid: 300, startTime: "1001" })))).toBeNull();
    const own: Owned = { pid: 70, startTime: "1000", pgid: 70, sid: 70 };
    expect(provenGroup(own, lineage, table(proc(70), proc(71, { pgid: 70, sid: 70, startTime: "1001" })))).toBeNull();
  });

  test("a group with no living member is nothing to signal", () => {
    expect(provenGroup(host, lineage, table(proc(300, { state: "Z" })))).toBeNull();
  });
});

describe("endProcesses with real processes", () => {
  const owned = (pid: number): Owned => ({ pid, startTime: startTimeOf(pid)!, pgid: pid, sid: pid });

  test("targets that have all ended: each reported gone, and one that can never be ours is left out", async () => {
    const done = Bun.spawn(["true"], { detached: true });
    const target = owned(done.pid);
    await done.exited;
    // pid 0 is never probed or signalled; it is dropped as it is when something is still running
    const endings = await endProcesses([target, { pid: 0, startTime: "1" }], { graceMs: 0 });
    expect(endings).toEqual([{ target, outcome: "gone", members: [] }]);
  });

  test("one still running among ended ones: it is ended, the others are reported gone", async () => {
    const done = Bun.spawn(["true"], { detached: true });
    const gone = owned(done.pid);
    await done.exited;
    const sleeper = Bun.spawn(["sleep", "60"], { detached: true });
    const running = owned(sleeper.pid);
    const endings = await endProcesses([gone, running], { graceMs: 1000 });
    expect(endings.map((e) => [e.target.pid, e.outcome])).toEqual([[gone.pid, "gone"], [running.pid, "ended"]]);
    expect(await sleeper.exited).not.toBe(0);
  });
});

describe("proveDescent with real processes", () => {
  /** A plugin host stand-in: a shell in a session of its own, running `script`, whose first line of output is a pid (and another). */
  async function host(script: string) {
    const proc = Bun.spawn(["sh", "-c", script], { detached: true, stdout: "pipe" });
    const reader = proc.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
    const stat = readStat(proc.pid)!;
    const record: Owned = { pid: proc.pid, startTime: stat.startTime, pgid: stat.pgid, sid: stat.sid };
    const [pid, other] = text.trim().split("\n")[0]!.split(" ").map(Number);
    return {
      record,
      pid: pid!,
      other: other ?? 0,
      [Symbol.asyncDispose]: async () => {
        process.kill(-proc.pid, "SIGKILL");
        await proc.exited;
      },
    };
  }
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 500 && !check(); i++) await Bun.sleep(10);
    expect(check()).toBe(true);
  };

  test("this process's own lineage is read from /proc: itself, its parent, its group and session", () => {
    const own = ownLineage();
    const self = readStat(process.pid)!;
    expect(own.pids.has(process.pid)).toBe(true);
    expect(own.pids.has(self.ppid)).toBe(true);
    expect({ pgid: own.pgid, sid: own.sid }).toEqual({ pgid: self.pgid, sid: self.sid });
  });

  test("this process's lineage is exactly itself and its ancestors up to the chain's end: never pid 0", () => {
    const expected = new Set<number>();
    for (let pid = process.pid; pid > 0; ) {
      expected.add(pid);
      pid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
    }
    expect([...ownLineage().pids].sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
    expect(ownLineage().pids.has(0)).toBe(false);
  });

  test("the walk up the parents stops at this process's lineage: a chain through it proves nothing", async () => {
    await using h = await host("sh -c 'sleep 60 & echo $! $$; wait' & wait");
    const noSession: Owned = { pid: h.record.pid, startTime: h.record.startTime }; // the session proof left out: the chain of parents alone
    expect(readStat(h.other)!.ppid).toBe(h.record.pid);
    expect(readStat(h.pid)!.ppid).toBe(h.other);
    expect(proveDescent(h.pid, noSession)).toEqual({ ok: true, process: expect.objectContaining({ pid: h.pid }) });
    const own = ownLineage();
    const through: Lineage = { pids: new Set([...own.pids, h.other]), pgid: own.pgid, sid: own.sid };
    expect(proveDescent(h.pid, noSession, through)).toEqual({ ok: false, reason: `it is not a descendant of the plugin host (pid ${h.record.pid})` });
  });

  test("a child, and a grandchild in a session of its own (its parent between them alive): descendants, recorded with start time, group and session", async () => {
    await using h = await host("( setsid sleep 60 & echo $!; wait ) & wait");
    await until(() => readStat(h.pid)?.sid === h.pid && readStat(h.pid)?.ppid !== h.record.pid); // its own session, not the host's child: only the chain of parents proves it
    const stat = readStat(h.pid)!;
    expect(proveDescent(h.pid, h.record)).toEqual({ ok: true, process: { pid: h.pid, startTime: stat.startTime, pgid: stat.pgid, sid: stat.sid } });
    expect(proveDescent(stat.ppid, h.record)).toEqual({ ok: true, process: expect.objectContaining({ pid: stat.ppid }) });
  });

  test("a grandchild whose parent has exited is a descendant by the host's session, and only if the host led it when recorded", async () => {
    await using h = await host("sh -c 'sleep 60 & echo $! $$'; sleep 60");
    await until(() => readStat(h.other) === null); // the parent between them has exited (and was reaped)
    expect(readStat(h.pid)!.ppid).not.toBe(h.record.pid);
    expect(readStat(h.pid)!.sid).toBe(h.record.pid);
    expect(proveDescent(h.pid, h.record).ok).toBe(true);
    expect(proveDescent(h.pid, { ...h.record, sid: h.record.sid! + 1 })).toEqual({ ok: false, reason: `it is not a descendant of the plugin host (pid ${h.record.pid})` });
  });

  test("refused: the host itself, a host whose start time is not the recorded one, no such process, a zombie, this process", async () => {
    await using h = await host("sleep 60 & echo $!; (exit 0) & exec sleep 60");
    expect(proveDescent(h.record.pid, h.record)).toEqual({ ok: false, reason: "it is the plugin host itself, which is recorded already" });
    expect(proveDescent(h.pid, { ...h.record, startTime: String(Number(h.record.startTime) + 1) })).toEqual({ ok: false, reason: "the plugin host has already ended" });
    expect(proveDescent(process.pid, h.record)).toEqual({ ok: false, reason: `pid ${process.pid} is this cxagent process itself` });
    const gone = Bun.spawn(["true"]);
    await gone.exited;
    expect(proveDescent(gone.pid, h.record)).toEqual({ ok: false, reason: "there is no such process (it may have exited already)" });
    const zombie = () => zombieOf(h.record.pid);
    await until(() => zombie() !== null);
    expect(proveDescent(zombie()!, h.record)).toEqual({ ok: false, reason: "it has already exited" });
  });

  test("a process of another session that is not the host's descendant", async () => {
    await using h = await host("echo 0; sleep 60");
    const other = Bun.spawn(["sleep", "60"], { detached: true });
    try {
      expect(proveDescent(other.pid, h.record)).toEqual({ ok: false, reason: `it is not a descendant of the plugin host (pid ${h.record.pid})` });
    } finally {
      other.kill("SIGKILL");
      await other.exited;
    }
  });
});

/** A zombie child of `parent`, by /proc, or null. */
function zombieOf(parent: number): number | null {
  const children = readFileSync(`/proc/${parent}/task/${parent}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  return children.find((pid) => readStat(pid)?.state === "Z") ?? null;
}
