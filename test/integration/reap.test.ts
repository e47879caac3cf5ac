/**
 * Processes a plugin starts are recorded and reaped, even after kill -9 (SPEC §8) — with real
 * sessions, real plugin hosts and real children, and nothing unrelated ever signalled.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTimeOf } from "../../src/reaper/proc.ts";
import { alive, approve, cli, fixture, openSession, ROOT, tempDir, until } from "../helpers.ts";

interface Held {
  pid: number;
  held: { plugin: string; host: number; output: { pids?: number[]; helper?: number } }[];
}

/** Starts a real session process holding the given plugins; resolves once they are loaded. */
async function holdSession(state: string, refs: string[]) {
  const proc = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-session.ts"), ...refs], {
    cwd: ROOT,
    env: { ...process.env, CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(state, "config") },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the session ended early: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  const held = JSON.parse(text) as Held;
  const children = held.held.flatMap((h) => h.output.pids ?? []);
  return { proc, held, hosts: held.held.map((h) => h.host), children };
}

function sessionRecords(state: string): string[] {
  const dir = join(state, "sessions");
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")) : [];
}

async function sleeper(): Promise<{ pid: number; kill: () => void }> {
  const proc = Bun.spawn(["sleep", "60"], { stdout: "ignore", stderr: "ignore" });
  return { pid: proc.pid, kill: () => proc.kill("SIGKILL") };
}

describe("after kill -9 of a session", () => {
  test("its plugin hosts exit on their own; the next reap ends exactly its three children and reports them", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const { proc, hosts, children } = await holdSession(state, [`${fixture("spawns-children")}={"count":2}`, fixture("undeclared-spawner")]);
    const undeclared = (JSON.parse(readFileSync(join(state, "sessions", sessionRecords(state)[0]!), "utf8")).processes as { pid: number; kind: string; plugin: string }[])
      .filter((p) => p.plugin === "undeclared-spawner" && p.kind === "child")
      .map((p) => p.pid);
    const all = [...children, ...undeclared];
    expect(all.length).toBe(3);
    for (const pid of [...hosts, ...all]) expect(alive(pid)).toBe(true);

    proc.kill("SIGKILL");
    await proc.exited;
    // the parent-death path: each plugin host ends by itself
    await until(() => hosts.every((h) => !alive(h)), 3000, "the plugin hosts to exit after their parent died");
    for (const pid of all) expect(alive(pid)).toBe(true); // a plugin's children outlive it...

    const dry = await cli(["reap", "--dry-run", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(dry.json().entries.map((e: { outcome: string }) => e.outcome)).toEqual(["would-kill", "would-kill", "would-kill"]);
    for (const pid of all) expect(alive(pid)).toBe(true);
    expect(sessionRecords(state).length).toBe(1);

    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    const entries = r.json().entries as { plugin: string; pid: number; kind: string; outcome: string }[];
    expect(entries.map((e) => [e.plugin, e.pid, e.kind, e.outcome]).sort()).toEqual(
      [
        ...children.map((pid) => ["spawns-children", pid, "child", "killed"]),
        ...undeclared.map((pid) => ["undeclared-spawner", pid, "child", "killed"]),
      ].sort(),
    );
    for (const pid of all) expect(alive(pid)).toBe(false); // ...until the reaper comes
    expect(sessionRecords(state)).toEqual([]);
  });

  test("a child that ignores SIGTERM is killed after the grace period, with its process group", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const { proc, children } = await holdSession(state, [`${fixture("spawns-children")}={"count":1,"stubborn":1}`]);
    proc.kill("SIGKILL");
    await proc.exited;
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.json().entries.map((e: { pid: number; outcome: string }) => [e.pid, e.outcome])).toEqual([[children[0], "killed"]]);
    expect(alive(children[0]!)).toBe(false);
  });

  test("a child in a session of its own (outside the plugin host's group) is reaped too", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const { proc, children } = await holdSession(state, [`${fixture("spawns-children")}={"count":2,"own_session":1}`]);
    proc.kill("SIGKILL");
    await proc.exited;
    await cli(["reap"], { env: { CXAGENT_STATE_DIR: state } });
    for (const pid of children) expect(alive(pid)).toBe(false);
  });

  test("the next session reaps by itself when it opens", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const { proc, children } = await holdSession(state, [`${fixture("spawns-children")}={"count":1}`]);
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
    const other = await holdSession(state, [`${fixture("spawns-children")}={"count":2}`]);
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
});

describe("a live session", () => {
  test("records each plugin host when spawned and each registered child before register_child returns", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await using session = await openSession({ stateDir: state });
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 2 } });
    const pids = (await plugin.invoke("pids")).output.pids as number[];
    const [file] = sessionRecords(state);
    const record = JSON.parse(readFileSync(join(state, "sessions", file!), "utf8"));
    expect(record.owner).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid) });
    expect(record.processes).toEqual([
      { pid: plugin.pid, startTime: startTimeOf(plugin.pid!), plugin: "spawns-children", kind: "host" },
      ...pids.map((pid) => ({ pid, startTime: startTimeOf(pid), plugin: "spawns-children", kind: "child" })),
    ]);
  });

  test("a plugin's stop ends its registered children; a clean close removes the record", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const session = await openSession({ stateDir: state });
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 2, own_session: 1 } });
    const pids = (await plugin.invoke("pids")).output.pids as number[];
    for (const pid of pids) expect(alive(pid)).toBe(true);
    await session.unload("spawns-children");
    for (const pid of pids) expect(alive(pid)).toBe(false);
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
    approve(join(ROOT, "examples/spawner"));
    const r = await cli(["invoke", "examples/spawner", "spawner_ping", "--args", '{"text": "are you there?"}', "--json"]);
    expect(r.code).toBe(0);
    const { content, helper } = r.json().result.output;
    expect(content).toBe("are you there?");
    expect(alive(helper)).toBe(false);
  });

  test("caught mid-call by kill -9: afterwards no process of it survives", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    approve(join(ROOT, "examples/spawner"), state);
    const proc = Bun.spawn([process.execPath, join(ROOT, "src/cli/main.ts"), "invoke", "examples/spawner", "spawner_wait", "--args", '{"ms": 60000}'], {
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
