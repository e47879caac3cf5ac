/**
 * src/reaper/reap.ts's reap() called directly, on session records written here and real
 * processes in groups of their own: a live session's record left alone, a dead one's processes
 * ended and reported with the members of the groups they made, a reused pid left alone, a dry
 * run, the record removed once nothing it names survives, a corrupt record and one naming what
 * can never be ours reported by path, and the default grace period. A process it may not signal
 * (still running after SIGKILL) is in test/integration/reap.test.ts, reaped as another user.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readStat, startTimeOf } from "../../src/reaper/proc.ts";
import { reap } from "../../src/reaper/reap.ts";
import { tempDir } from "../helpers.ts";

const alive = (pid: number) => {
  const s = readStat(pid);
  return s !== null && s.state !== "Z";
};

/** A shell leading a group and session of its own (a plugin host, as spawned), with a child in its group; `ignoreTerm` makes both ignore SIGTERM. */
async function leader(ignoreTerm = false) {
  const proc = Bun.spawn(["sh", "-c", `${ignoreTerm ? "trap '' TERM; " : ""}sleep 60 & echo $!; wait; sleep 60`], { detached: true, stdout: "pipe" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const child = Number(text.trim());
  return {
    pid: proc.pid,
    child,
    [Symbol.asyncDispose]: async () => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // ended
      }
      await proc.exited;
    },
  };
}

/** A record whose owner is gone (this pid, another start time), naming `processes`; its path. */
function record(state: string, name: string, processes: object[], owner = { pid: process.pid, startTime: "1" }): string {
  mkdirSync(join(state, "sessions"), { recursive: true });
  const path = join(state, "sessions", `${name}.json`);
  writeFileSync(path, JSON.stringify({ owner, createdAt: new Date().toISOString(), processes }));
  return path;
}

const empty = { entries: [], live: [], corrupt: [], refused: [] };

describe("a dead session's record", () => {
  test("its plugin host ended, with the group it made: both reported, and the record removed", async () => {
    using dir = tempDir();
    await using host = await leader();
    const path = record(dir.path, "dead", [{ pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host", pgid: host.pid, sid: host.pid }]);
    const report = await reap({ stateDir: dir.path, graceMs: 2000 });
    expect(report).toEqual({
      ...empty,
      entries: [
        { plugin: "p", pid: host.pid, kind: "host", outcome: "ended", record: path },
        { plugin: "p", pid: host.child, kind: "member", outcome: "ended", record: path },
      ],
    });
    expect(alive(host.pid) || alive(host.child)).toBe(false);
    expect(existsSync(path)).toBe(false);
  });

  test("a dry run: what would end, nothing signalled, the record kept", async () => {
    using dir = tempDir();
    await using host = await leader();
    const path = record(dir.path, "dead", [{ pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host" }]);
    const report = await reap({ stateDir: dir.path, dryRun: true });
    expect(report.entries).toEqual([
      { plugin: "p", pid: host.pid, kind: "host", outcome: "would-end", record: path },
      { plugin: "p", pid: host.child, kind: "member", outcome: "would-end", record: path },
    ]);
    expect(alive(host.pid) && alive(host.child)).toBe(true);
    expect(existsSync(path)).toBe(true);
  });

  test("a registered child that leads no group: itself only; a pid held by another process now: reused, left alone; one gone: not reported", async () => {
    using dir = tempDir();
    await using host = await leader();
    const gone = Bun.spawn(["true"]);
    await gone.exited;
    const path = record(dir.path, "dead", [
      { pid: host.child, startTime: startTimeOf(host.child), plugin: "c", kind: "child", pgid: host.pid, sid: host.pid },
      { pid: host.pid, startTime: String(BigInt(startTimeOf(host.pid)!) - 1n), plugin: "h", kind: "host" },
      { pid: gone.pid, startTime: "1", plugin: "g", kind: "child" },
    ]);
    const report = await reap({ stateDir: dir.path, graceMs: 0 });
    expect(report.entries).toEqual([
      { plugin: "c", pid: host.child, kind: "child", outcome: "ended", record: path },
      { plugin: "h", pid: host.pid, kind: "host", outcome: "reused", record: path },
    ]);
    expect(alive(host.child)).toBe(false);
    expect(alive(host.pid)).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  test("SIGTERM has 2 s by default before SIGKILL", async () => {
    using dir = tempDir();
    await using host = await leader(true);
    record(dir.path, "dead", [{ pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host" }]);
    const began = performance.now();
    const report = await reap({ stateDir: dir.path });
    expect(performance.now() - began).toBeGreaterThanOrEqual(1990);
    expect(report.entries.map((e) => e.outcome)).toEqual(["ended", "ended"]);
  });
});

describe("records left alone", () => {
  test("a live session's (its owner has the recorded start time), and the one to skip (this session's own)", async () => {
    using dir = tempDir();
    await using host = await leader();
    const processes = [{ pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host" }];
    const live = record(dir.path, "live", processes, { pid: process.pid, startTime: startTimeOf(process.pid)! });
    const own = record(dir.path, "own", processes);
    expect(await reap({ stateDir: dir.path, graceMs: 0, skip: own })).toEqual({ ...empty, live: [live] });
    expect(alive(host.pid) && existsSync(live) && existsSync(own)).toBe(true);
  });

  test("a corrupt one, reported by path with the problem's words, kept; a dangling link (a record removed since listed), skipped", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "sessions"), { recursive: true });
    const path = join(dir.path, "sessions", "broken.json");
    writeFileSync(path, '{"owner": 1}');
    symlinkSync(join(dir.path, "nothing"), join(dir.path, "sessions", "closed.json"));
    const report = await reap({ stateDir: dir.path });
    expect(report.corrupt).toEqual([{ path, problem: expect.stringMatching(new RegExp(`^the session record ${path} is corrupt`)) }]);
    expect({ ...report, corrupt: [] }).toEqual(empty);
    expect(readFileSync(path, "utf8")).toBe('{"owner": 1}');
  });

  test("one naming what can never be ours: refused whole by path, the plugin and why named, nothing in it signalled", async () => {
    using dir = tempDir();
    await using host = await leader();
    const ours = { pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host" };
    const me = { pid: process.pid, startTime: startTimeOf(process.pid), plugin: "x", kind: "child" };
    const one = record(dir.path, "a-one", [ours, { pid: 1, startTime: "1", plugin: "ghost", kind: "host" }]);
    const self = record(dir.path, "b-self", [ours, me]);
    const parent = record(dir.path, "c-parent", [ours, { ...me, pid: process.ppid, kind: "host", pgid: process.ppid }]);
    const report = await reap({ stateDir: dir.path, graceMs: 0 });
    const refused = (path: string, why: string) => ({ path, problem: `the session record ${path} was not acted on: ${why}` });
    expect(report).toEqual({
      ...empty,
      refused: [
        refused(one, "it names a plugin host of plugin 'ghost' that cannot be one: pid 1 is never a plugin's process"),
        refused(self, `it names a process of plugin 'x' that cannot be one: pid ${process.pid} is this cxagent process itself`),
        refused(parent, `it names a plugin host of plugin 'x' that cannot be one: pid ${process.ppid} is an ancestor of this cxagent process`),
      ],
    });
    expect(alive(host.pid) && alive(host.child)).toBe(true);
    for (const path of [one, self, parent]) expect(existsSync(path)).toBe(true);
  });
});
