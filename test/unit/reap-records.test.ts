/**
 * src/reaper/reap.ts's reap() called directly, on session records written here and real
 * processes in groups of their own: a live session's record left alone, a dead one's processes
 * ended and reported with the members of the groups they made, a reused pid left alone, a dry
 * run, the record removed once nothing it names survives, a corrupt record and one naming what
 * can never be ours reported by path (a group this process is in, from a process whose group
 * leader has exited), the default grace period, and what survives SIGKILL keeping its record
 * (reaped as user nobody, from a copy of src/ nobody may read).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readStat, startTimeOf } from "../../src/reaper/proc.ts";
import { reap } from "../../src/reaper/reap.ts";
import { ROOT, STRYKER, tempDir, until } from "../helpers.ts";
import { alive, leader, started } from "../process-groups.ts";



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

  test("removed by another reaper while this one ends its processes (two sessions opening at once): no error", async () => {
    using dir = tempDir();
    await using host = await leader();
    const path = record(dir.path, "dead", [{ pid: host.pid, startTime: startTimeOf(host.pid), plugin: "p", kind: "host" }]);
    const reaping = reap({ stateDir: dir.path, graceMs: 0 });
    // reap has read the record and waits on the ending (its first await): the other one removes it now
    rmSync(path);
    expect((await reaping).entries.map((e) => e.outcome)).toEqual(["ended", "ended"]);
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

test("a record naming a process whose pid is this process's own group (its leader gone): refused when recorded as leading it, reaped when not", async () => {
  // reap runs in a process whose group and session leader (sh, setsid) has exited: the group's
  // pid is then neither this process nor an ancestor, and only the group check refuses it
  using dir = tempDir();
  const out = join(dir.path, "out");
  const code = `
    const { reap } = await import(${JSON.stringify(join(ROOT, "src/reaper/reap.ts"))});
    const { readStat } = await import(${JSON.stringify(join(ROOT, "src/reaper/proc.ts"))});
    const { existsSync, mkdirSync, writeFileSync } = await import("node:fs");
    const state = process.argv[1];
    const group = readStat(process.pid).pgid;
    for (let i = 0; i < 1000 && readStat(process.pid).ppid === group; i++) await Bun.sleep(10);
    mkdirSync(state + "/sessions", { recursive: true });
    const record = (name, p) => writeFileSync(state + "/sessions/" + name, JSON.stringify({ owner: { pid: process.pid, startTime: "1" }, createdAt: "then", processes: [p] }));
    record("a.json", { pid: group, startTime: "1", plugin: "g", kind: "child", pgid: group });
    record("b.json", { pid: group, startTime: "1", plugin: "g", kind: "child" });
    const report = await reap({ stateDir: state, graceMs: 0 });
    console.log(JSON.stringify({ group, parentGone: readStat(process.pid).ppid !== group, report, kept: ["a.json", "b.json"].map((f) => existsSync(state + "/sessions/" + f)) }));
  `;
  const sh = Bun.spawn(["setsid", "sh", "-c", '"$0" -e "$1" "$2" > "$3" 2>&1 &', process.execPath, code, dir.path, out], { env: { ...process.env, ...STRYKER } });
  await sh.exited;
  await until(() => existsSync(out) && readFileSync(out, "utf8").endsWith("\n"), 20_000, "the reaping process to print its report");
  const { group, parentGone, report, kept } = JSON.parse(readFileSync(out, "utf8"));
  expect(group).toBe(sh.pid);
  expect(parentGone).toBe(true);
  const a = join(dir.path, "sessions", "a.json");
  expect(report).toEqual({
    ...empty,
    refused: [{ path: a, problem: `the session record ${a} was not acted on: it names a process of plugin 'g' that cannot be one: process group ${group} is this cxagent process's own group` }],
  });
  expect(kept).toEqual([true, false]);
}, 30_000);

test("what survives SIGKILL keeps its record (reaped as user nobody): a process of root's, or a member of root's left in the group of one that ended", async () => {
  // nobody must read the code: reap.ts and what it imports (node_modules' too) bundled into one file
  // in a folder anyone may enter; the checkout may sit in a private folder (a CI clone under a 0700
  // temporary folder, Stryker's sandbox)
  using readable = tempDir();
  chmodSync(readable.path, 0o755);
  const bundled = await Bun.build({ entrypoints: [join(ROOT, "src/reaper/reap.ts")], outdir: readable.path, target: "bun", naming: "reap.js" });
  expect(bundled.logs).toEqual([]);
  chmodSync(join(readable.path, "reap.js"), 0o644);
  using state = tempDir();
  chmodSync(state.path, 0o777);
  const rootOwned = Bun.spawn(["sleep", "60"]);
  // a leader of nobody's, with a member of root's in its group: sh starts the member, then becomes nobody's
  await using mixed = await started("sleep 60 & echo $!; exec setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60");
  try {
    await until(() => readStat(mixed.pid)?.startTime !== undefined && readFileSync(`/proc/${mixed.pid}/status`, "utf8").includes("Uid:\t65534"), 10_000, "the leader to be nobody's");
    const c = record(state.path, "c", [{ pid: rootOwned.pid, startTime: startTimeOf(rootOwned.pid), plugin: "r", kind: "child" }]);
    const m = record(state.path, "m", [{ pid: mixed.pid, startTime: startTimeOf(mixed.pid), plugin: "m", kind: "host", pgid: mixed.pid, sid: mixed.pid }]);
    chmodSync(join(state.path, "sessions"), 0o777);
    for (const path of [c, m]) chmodSync(path, 0o666);
    const code = `const { reap } = await import(${JSON.stringify(join(readable.path, "reap.js"))}); console.log(JSON.stringify(await reap({ stateDir: process.argv[1], graceMs: 0 })));`;
    const asNobody = Bun.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, "-e", code, state.path], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...STRYKER },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr] = await Promise.all([new Response(asNobody.stdout).text(), new Response(asNobody.stderr).text(), asNobody.exited]);
    expect(stderr).toBe("");
    expect(JSON.parse(stdout).entries).toEqual([
      { plugin: "r", pid: rootOwned.pid, kind: "child", outcome: "still-running", record: c },
      { plugin: "m", pid: mixed.pid, kind: "host", outcome: "ended", record: m },
      { plugin: "m", pid: mixed.pids[0]!, kind: "member", outcome: "still-running", record: m },
    ]);
    expect([existsSync(c), existsSync(m), alive(rootOwned.pid), alive(mixed.pids[0]!)]).toEqual([true, true, true, true]);
  } finally {
    rootOwned.kill("SIGKILL");
    await rootOwned.exited;
  }
}, 30_000);
