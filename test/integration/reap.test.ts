/**
 * Processes a plugin starts are recorded and reaped, even after kill -9 (SPEC §8) — with real
 * sessions, real plugin hosts and real children, and nothing unrelated ever signalled.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTimeOf } from "../../src/reaper/proc.ts";
import { alive, approve, cli, fixture, fixtureLibrary, hostsOf, openSession, ROOT, tempDir, until, within } from "../helpers.ts";
import { asNobody, inPidNamespace, NOBODY, PID_NAMESPACE } from "../isolation.ts";
import { groupMembers, holdSession, procStat, readSessionRecord, sessionRecords, signalsReceived } from "../processes.ts";

async function sleeper(): Promise<{ pid: number; kill: () => void }> {
  const proc = Bun.spawn(["sleep", "60"], { stdout: "ignore", stderr: "ignore" });
  return { pid: proc.pid, kill: () => proc.kill("SIGKILL") };
}

describe("after kill -9 of a session", () => {
  test("its plugin hosts end their own groups; the next reap ends exactly the registered children that left them, and reports them", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using session = await holdSession(state, [`${fixture("spawns-children")}={"count":2,"own_session":1}`, fixture("undeclared-spawner")]);
    const { proc, hosts, children } = session;
    const undeclared = readSessionRecord(state)
      .processes.filter((p) => p.plugin === "undeclared-spawner" && p.kind === "child")
      .map((p) => p.pid);
    expect(children.length).toBe(2);
    expect(undeclared.length).toBe(1);
    for (const pid of [...hosts, ...children, ...undeclared]) expect(alive(pid)).toBe(true);
    for (const pid of children) expect(procStat(pid)?.sid).toBe(pid); // they left the host's group and session
    expect(procStat(undeclared[0]!)?.pgid).toBe(hosts[1]); // it stayed in its host's group

    proc.kill("SIGKILL");
    await proc.exited;
    // the parent-death path: each plugin host ends its group, itself included
    await until(() => [...hosts, ...undeclared].every((h) => !alive(h)), 10_000, "the plugin hosts and their groups to end after their parent died");
    for (const pid of children) expect(alive(pid)).toBe(true); // ...but a registered child outside the group outlives it

    const dry = await cli(["reap", "--dry-run", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(dry.json().entries.map((e: { outcome: string }) => e.outcome)).toEqual(["would-end", "would-end"]);
    for (const pid of children) expect(alive(pid)).toBe(true);
    expect(sessionRecords(state).length).toBe(1);

    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    const entries = r.json().entries as { plugin: string; pid: number; kind: string; outcome: string }[];
    expect(entries.map((e) => [e.plugin, e.pid, e.kind, e.outcome]).sort()).toEqual(children.map((pid) => ["spawns-children", pid, "child", "ended"]).sort());
    for (const pid of children) expect(alive(pid)).toBe(false); // ...until the reaper comes
    expect(sessionRecords(state)).toEqual([]);
  });

  test("killed while its plugin host hangs in describe (where stdin is not read): no host is left within 3 s", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const marker = join(dir.path, "in-describe");
    const library = fixtureLibrary("describe-hangs");
    const proc = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-session.ts"), fixture("describe-hangs")], {
      cwd: ROOT,
      env: { ...process.env, CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(state, "config"), CXAGENT_FX_MARKER: marker },
      stdout: "ignore",
      stderr: "ignore",
    });
    let hosts: number[] = [];
    try {
      await until(() => existsSync(marker) && readFileSync(marker, "utf8").endsWith("\n"), 10_000, "the plugin host to be inside describe");
      hosts = [Number(readFileSync(marker, "utf8"))];
      expect(hostsOf(library)).toEqual(hosts);
      proc.kill("SIGKILL");
      await proc.exited;
      await until(() => !alive(hosts[0]!), 3000, "the plugin host to die with its parent");
    } finally {
      proc.kill("SIGKILL");
      for (const pid of hosts) if (alive(pid)) process.kill(pid, "SIGKILL"); // only when the test failed
    }
  });

  test("a child that led its own group and ignores SIGTERM is killed after the grace period, with its group", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using session = await holdSession(state, [`${fixture("spawns-children")}={"count":1,"stubborn":1,"own_session":1}`]);
    const { proc, hosts, children } = session;
    const [shell] = children as [number];
    await until(() => groupMembers(shell).length === 2, 5000, "the child's shell to start its sleep");
    proc.kill("SIGKILL");
    await proc.exited;
    await until(() => !alive(hosts[0]!), 10_000, "the plugin host to end after its parent died");
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    const entries = r.json().entries as { pid: number; kind: string; outcome: string }[];
    // the shell, registered, and the sleep it started, in the group the shell leads
    expect(entries.map((e) => [e.kind, e.outcome])).toEqual([["child", "ended"], ["member", "ended"]]);
    expect(entries[0]!.pid).toBe(shell);
    for (const e of entries) expect(alive(e.pid)).toBe(false);
  });

  test("the next session reaps by itself when it opens", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using session = await holdSession(state, [`${fixture("spawns-children")}={"count":1,"own_session":1}`]);
    const { proc, children } = session;
    proc.kill("SIGKILL");
    await proc.exited;
    const r = await cli(["list"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.stderr).toContain(`ended a process of plugin 'spawns-children' (pid ${children[0]}) left by a session that died`);
    expect(alive(children[0]!)).toBe(false);
  });
});

describe("nothing that is not provably ours", () => {
  test("a pid now held by another process is left alone and reported as reused", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const stranger = await sleeper();
    try {
      const dead = Bun.spawnSync(["true"]).pid;
      mkdirSync(join(state, "sessions"), { recursive: true });
      writeFileSync(
        join(state, "sessions", "old.json"),
        JSON.stringify({
          owner: { pid: dead, startTime: "1" },
          createdAt: new Date().toISOString(),
          processes: [
            { pid: stranger.pid, startTime: "1", plugin: "ghost", kind: "child" }, // the pid, not the process
            { pid: dead, startTime: "2", plugin: "ghost", kind: "host" }, // already gone: dropped silently
          ],
        }),
      );
      const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.json().entries).toEqual([{ plugin: "ghost", pid: stranger.pid, kind: "child", outcome: "reused", record: join(state, "sessions", "old.json") }]);
      expect(alive(stranger.pid)).toBe(true);
      expect(sessionRecords(state)).toEqual([]);
    } finally {
      stranger.kill();
    }
  });

  test("two live sessions: reaping from one leaves the other's plugin hosts and children alone", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using other = await holdSession(state, [`${fixture("spawns-children")}={"count":2}`]);
    try {
      const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.json()).toMatchObject({ entries: [], live: [expect.stringContaining(join(state, "sessions"))] });
      for (const pid of [...other.hosts, ...other.children]) expect(alive(pid)).toBe(true);
      await using mine = await openSession({ stateDir: state });
      expect(mine.reaped.entries).toEqual([]);
      for (const pid of [...other.hosts, ...other.children]) expect(alive(pid)).toBe(true);
    } finally {
      other.proc.kill("SIGKILL");
      await other.proc.exited;
      await cli(["reap"], { env: { CXAGENT_STATE_DIR: state } });
    }
  });

  test("a corrupt record is reported by path and kept for inspection", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    mkdirSync(join(state, "sessions"), { recursive: true });
    const file = join(state, "sessions", "broken.json");
    writeFileSync(file, '{"owner": {"pid": "not a number"}}');
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    expect(r.json().corrupt).toEqual([{ path: file, problem: expect.stringContaining(`the session record ${file} is corrupt`) }]);
    expect(readFileSync(file, "utf8")).toBe('{"owner": {"pid": "not a number"}}');
  });

  test("a record gone between listing and reading (another session closing): skipped, and every command runs", async () => {
    // A dangling link is listed and then not there to read, as a record its session removed
    // after this reap listed the folder; a hundred sessions closing at once cannot be timed.
    using dir = tempDir();
    const state = join(dir.path, "state");
    mkdirSync(join(state, "sessions"), { recursive: true });
    symlinkSync(join(dir.path, "nothing-here"), join(state, "sessions", "closed.json"));
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ dryRun: false, entries: [], live: [], corrupt: [], refused: [], results: { removed: [], foreign: [], leftovers: [] } });
    expect((await cli(["list", "--json"], { env: { CXAGENT_STATE_DIR: state } })).code).toBe(0);
  });
});

/** Writes a session record whose owner is long gone, naming `processes`; returns its path. */
function deadSessionRecord(state: string, name: string, processes: object[]): string {
  mkdirSync(join(state, "sessions"), { recursive: true });
  const path = join(state, "sessions", `${name}.json`);
  const dead = Bun.spawnSync(["true"]).pid;
  writeFileSync(path, JSON.stringify({ owner: { pid: dead, startTime: "1" }, createdAt: new Date().toISOString(), processes }));
  return path;
}

describe("a record naming what can never be ours is refused whole", () => {
  test.skipIf(!PID_NAMESPACE)("pid 1, with its real start time, as a plugin host (in a private pid namespace): reported by path, nothing signalled", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const record = join(state, "sessions", "pid-one.json");
    const { stdout, stderr } = await inPidNamespace(
      `sleep 600 & SENTINEL=$!
      sleep 600 & NEIGHBOUR=$!
      mkdir -p "$CXAGENT_STATE_DIR/sessions"
      ONE=$(cut -d' ' -f22 /proc/1/stat)
      SN=$(cut -d' ' -f22 /proc/$NEIGHBOUR/stat)
      printf '{"owner":{"pid":999999,"startTime":"1"},"createdAt":"then","processes":[{"pid":%s,"startTime":"%s","plugin":"ghost","kind":"child"},{"pid":1,"startTime":"%s","plugin":"ghost","kind":"host","pgid":1,"sid":1}]}' $NEIGHBOUR $SN $ONE > ${record}
      $CX reap --json
      kill -0 $SENTINEL && kill -0 $NEIGHBOUR && echo "sentinels alive"
      kill $SENTINEL $NEIGHBOUR`,
      { CXAGENT_STATE_DIR: state },
    );
    expect(stdout.endsWith("sentinels alive\n")).toBe(true);
    const report = JSON.parse(stdout.slice(0, stdout.lastIndexOf("}") + 1));
    expect(report.entries).toEqual([]); // not even the other process the record names
    expect(report.refused).toEqual([
      { path: record, problem: `the session record ${record} was not acted on: it names a plugin host of plugin 'ghost' that cannot be one: pid 1 is never a plugin's process` },
    ]);
    expect(stderr).not.toContain("pid 1 got SIGTERM");
    expect(existsSync(record)).toBe(true); // kept for inspection
  });

  test("the test runner's own pid (the reaper's parent): reported by path, nothing signalled", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using signals = signalsReceived();
    const me = { pid: process.pid, startTime: startTimeOf(process.pid), plugin: "ghost" };
    const record = deadSessionRecord(state, "runner", [{ ...me, kind: "child" }, { ...me, kind: "host", pgid: process.pid, sid: process.pid }]);
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({
      entries: [],
      refused: [{ path: record, problem: expect.stringContaining(`pid ${process.pid} is an ancestor of this cxagent process`) }],
    });
    const text = await cli(["reap"], { env: { CXAGENT_STATE_DIR: state } });
    expect(text.stdout).toContain(`refused, nothing in it was signalled: the session record ${record} was not acted on`);
    expect(signals.received).toEqual([]);
    expect(existsSync(record)).toBe(true);
  });

  test("the reaping process itself (a library session opening): reported by path, nothing signalled", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    using signals = signalsReceived();
    const record = deadSessionRecord(state, "itself", [{ pid: process.pid, startTime: startTimeOf(process.pid), plugin: "ghost", kind: "child" }]);
    await using session = await openSession({ stateDir: state });
    expect(session.reaped.refused).toEqual([{ path: record, problem: expect.stringContaining(`pid ${process.pid} is this cxagent process itself`) }]);
    expect(signals.received).toEqual([]);
  });
});

describe("reap reports outcomes, not intentions", () => {
  test.skipIf(!NOBODY)("a process it may not signal (a root process, reaped by an ordinary user): still running after SIGKILL, and the record is kept", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const rootOwned = await sleeper();
    try {
      const record = deadSessionRecord(state, "root", [{ pid: rootOwned.pid, startTime: startTimeOf(rootOwned.pid), plugin: "ghost", kind: "child" }]);
      chmodSync(dir.path, 0o777);
      chmodSync(state, 0o777);
      chmodSync(join(state, "sessions"), 0o777);
      chmodSync(record, 0o666);
      const main = join(ROOT, "src/main.ts");
      const env = { CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(dir.path, "config") };
      const r = await asNobody([process.execPath, main, "reap", "--json"], env);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).entries).toEqual([{ plugin: "ghost", pid: rootOwned.pid, kind: "child", outcome: "still-running", record }]);
      expect(alive(rootOwned.pid)).toBe(true);
      expect(existsSync(record)).toBe(true); // so a later run can try again
      const text = await asNobody([process.execPath, main, "reap"], env);
      expect(text.stdout).toContain(`still running after SIGKILL: process ${rootOwned.pid} of plugin 'ghost'`);
    } finally {
      rootOwned.kill();
    }
  });
});

describe("a live session", () => {
  test("records each plugin host when spawned and each registered child before register_child returns", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await using session = await openSession({ stateDir: state });
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 2 } });
    const pids = (await plugin.invoke("pids")).output.pids as number[];
    const record = readSessionRecord(state) as { owner: unknown; processes: unknown[] };
    expect(record.owner).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid) });
    // with the group and session each had: the host leads its own, its children are in it
    const host = plugin.pid!;
    expect(record.processes).toEqual([
      { pid: host, startTime: startTimeOf(host), plugin: "spawns-children", kind: "host", pgid: host, sid: host },
      ...pids.map((pid) => ({ pid, startTime: startTimeOf(pid), plugin: "spawns-children", kind: "child", pgid: host, sid: host })),
    ]);
  });

  test("register_child returns only once the record names the child: the plugin finds it there at once", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await using session = await openSession({ stateDir: state, env: { CXAGENT_FX_STATE_DIR: state } });
    const plugin = await session.load(fixture("register-child-checks-record"));
    // many, so that a register_child that returned early would lose the race at least once
    const { pids, recordedOnReturn } = (await within(plugin.invoke("spawn_and_look", { count: 20 }), 30_000, "the call")).output as { pids: number[]; recordedOnReturn: boolean[] };
    expect(pids.length).toBe(20);
    expect(recordedOnReturn).toEqual(Array(20).fill(true));
    await session.unload("register-child-checks-record");
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  test("a plugin's stop ends its registered children; the record goes once it names nothing, and a clean close removes it", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const session = await openSession({ stateDir: state });
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 2, own_session: 1 } });
    const pids = (await plugin.invoke("pids")).output.pids as number[];
    for (const pid of pids) expect(alive(pid)).toBe(true);
    await session.unload("spawns-children");
    for (const pid of pids) expect(alive(pid)).toBe(false);
    // Every process it named is gone: the record is removed at once, not rewritten empty.
    expect(sessionRecords(state)).toEqual([]);
    // The next plugin host is recorded again, in a whole record.
    const again = await session.load(fixture("spawns-children"), { settings: { count: 1 } });
    const record = readSessionRecord(state);
    expect(record.owner as unknown).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid) });
    expect(record.processes.filter((p) => p.kind === "host").map((p) => p.pid)).toEqual([again.pid!]);
    await session.close();
    expect(sessionRecords(state)).toEqual([]);
  });

  test("children it never registered, left in its plugin host's group, are ended when it stops", async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 2, unregistered: 1 } });
    const pids = (await plugin.invoke("pids")).output.pids as number[];
    for (const pid of pids) expect(alive(pid)).toBe(true);
    await session.unload("spawns-children");
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  test("spawns: false with a registered child: recorded anyway, with a warning in its log", async () => {
    const logs: string[] = [];
    await using session = await openSession({ onLog: (_p, _l, text) => logs.push(text) });
    await session.load(fixture("undeclared-spawner"));
    expect(logs.some((l) => /registered process \d+ although its manifest says spawns: false; it was recorded anyway/.test(l))).toBe(true);
  });
});

describe("the spawner example", () => {
  test("through the CLI: its helper answers, and is gone when the command ends", async () => {
    await approve(join(ROOT, "examples/spawner"));
    const r = await cli(["invoke", "examples/spawner", "spawner_ping", "--args", '{"text": "are you there?"}', "--json"]);
    expect(r.code).toBe(0);
    const { content, helper } = r.json().result.output;
    expect(content).toBe("are you there?");
    expect(alive(helper)).toBe(false);
  });

  test("caught mid-call by kill -9: afterwards no process of it survives", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await approve(join(ROOT, "examples/spawner"), state);
    const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "invoke", "examples/spawner", "spawner_wait", "--args", '{"ms": 60000}'], {
      cwd: ROOT,
      env: { ...process.env, CXAGENT_STATE_DIR: state },
      stdout: "ignore",
      stderr: "ignore",
    });
    let recorded: { pid: number }[] = [];
    await until(() => {
      const [file] = sessionRecords(state);
      if (!file) return false;
      recorded = JSON.parse(readFileSync(join(state, "sessions", file), "utf8")).processes;
      return recorded.length === 2; // the plugin host and its helper
    }, 10_000, "the session record to name the helper");
    proc.kill("SIGKILL");
    await proc.exited;
    await cli(["reap"], { env: { CXAGENT_STATE_DIR: state } });
    await until(() => recorded.every((p) => !alive(p.pid)), 3000, "every process of the spawner to be gone");
    expect(sessionRecords(state)).toEqual([]);
  });
});
