/**
 * Registration proves descent (SPEC §8): a process a plugin registers — through register_child,
 * or by a forged {"event":"child"} line on the protocol pipe — is recorded only if /proc shows it
 * is the plugin host's descendant. Anything else is refused with one line in the plugin's log,
 * register_child still returns, and nothing is ever signalled because of it.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { alive, approve, cli, fixture, ROOT, tempDir } from "../helpers.ts";
import { inPidNamespace, PID_NAMESPACE } from "../isolation.ts";
import { bystander, holdSession, procStat, readSessionRecord, sessionRecords, signalsReceived, startCli } from "../processes.ts";

const FOREIGN = fixture("registers-foreign");

describe("a process that is not the plugin's own", () => {
  for (const via of ["register_child", "a forged line on the protocol pipe"]) {
    test(`registered through ${via}: refused and named in the log; alive after stop and after reap`, async () => {
      using dir = tempDir();
      const state = join(dir.path, "state");
      await approve(FOREIGN, state);
      using stranger = bystander();
      expect(procStat(stranger.pid)?.sid).toBe(stranger.pid); // a session of its own, as ps shows it
      const args = JSON.stringify({ pid: stranger.pid, ...(via === "register_child" ? {} : { wire: 1 }) });

      const r = await cli(["invoke", FOREIGN, "register", "--args", args], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.code).toBe(0);
      expect(alive(stranger.pid)).toBe(true); // after the plugin's stop
      expect(r.stderr).toMatch(new RegExp(`register_child\\(${stranger.pid}\\) was refused: it is not a descendant of the plugin host \\(pid \\d+\\); nothing was recorded`));

      // Caught by kill -9 while holding: the record names only the plugin host, and reap spares the stranger.
      const held = startCli(["invoke", FOREIGN, "register", "--args", JSON.stringify({ ...JSON.parse(args), hold: 1 })], { CXAGENT_STATE_DIR: state });
      await held.said(`register_child(${stranger.pid}) was refused`);
      expect(readSessionRecord(state).processes.map((p) => p.kind)).toEqual(["host"]);
      held.proc.kill("SIGKILL");
      await held.proc.exited;
      const reaped = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
      expect(reaped.json().entries.filter((e: { pid: number }) => e.pid === stranger.pid)).toEqual([]);
      expect(alive(stranger.pid)).toBe(true);
      expect(sessionRecords(state)).toEqual([]);
    });
  }

  test("another session's plugin host: refused, and it outlives this session", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await approve(FOREIGN, state);
    using other = await holdSession(join(dir.path, "other"), [fixture("noop")]);
    try {
      const host = other.hosts[0]!;
      const r = await cli(["invoke", FOREIGN, "register", "--args", JSON.stringify({ pid: host })], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.code).toBe(0);
      expect(alive(host)).toBe(true);
      expect(r.stderr).toContain(`register_child(${host}) was refused: it is not a descendant of the plugin host`);
    } finally {
      other.proc.kill("SIGKILL");
      await other.proc.exited;
    }
  });

  test("an ancestor of the cxagent process (the test runner): refused, and nothing is signalled", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await approve(FOREIGN, state);
    using signals = signalsReceived();
    const r = await cli(["invoke", FOREIGN, "register", "--args", JSON.stringify({ pid: process.pid })], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    expect(signals.received).toEqual([]);
    expect(r.stderr).toContain(`register_child(${process.pid}) was refused: pid ${process.pid} is an ancestor of this cxagent process; nothing was recorded`);
  });

  test("a pid that does not exist: refused, named in the log", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await approve(FOREIGN, state);
    const dead = Bun.spawnSync(["true"]).pid;
    for (const extra of [{}, { wire: 1 }]) {
      const r = await cli(["invoke", FOREIGN, "register", "--args", JSON.stringify({ pid: dead, ...extra })], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`register_child(${dead}) was refused: there is no such process (it may have exited already)`);
    }
  });
});

describe.skipIf(!PID_NAMESPACE)("pid 1 and the cxagent process itself (in a private pid namespace)", () => {
  test("registering 1 or getppid(), by register_child or on the wire: refused, the CLI exits normally, nothing is signalled", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await approve(FOREIGN, state);
    const { stdout, stderr } = await inPidNamespace(
      `sleep 600 & SENTINEL=$!
      for ARGS in '{"pid":1}' '{"pid":1,"wire":1}' '{"parent":1}' '{"parent":1,"wire":1}'; do
        $CX invoke ${FOREIGN} register --args "$ARGS" >/dev/null; echo "$ARGS: exit $?"
      done
      kill -0 $SENTINEL && echo "sentinel alive"
      kill $SENTINEL`,
      { CXAGENT_STATE_DIR: state },
    );
    expect(stdout).toBe(
      ['{"pid":1}: exit 0', '{"pid":1,"wire":1}: exit 0', '{"parent":1}: exit 0', '{"parent":1,"wire":1}: exit 0', "sentinel alive", ""].join("\n"),
    );
    expect(stderr.match(/register_child\(1\) was refused: pid 1 is never a plugin's process; nothing was recorded/g)?.length).toBe(2);
    const itself = [...stderr.matchAll(/register_child\((\d+)\) was refused: pid (\d+) is this cxagent process itself; nothing was recorded/g)];
    expect(itself.length).toBe(2);
    for (const m of itself) expect(m[1]).toBe(m[2]!);
    expect(stderr).not.toContain("pid 1 got SIGTERM");
  });
});

// Which process is whose, as proveDescent reads it from /proc: the cases real processes cannot
// stage (a child older than its parent exists only when a pid was reused) are staged in a private
// pid and mount namespace, with a stat file of the test's own bound over the child's.
describe.skipIf(!PID_NAMESPACE)("descent, against a /proc the test writes", () => {
  /**
   * Starts a "host" and a "child" (two sleeps, pid 1's children); binds over the child's
   * /proc/<pid>/stat one whose parent is the host and whose start time is the host's plus
   * `offset` ticks; asks the prover with the host's start time plus `hostOffset`.
   */
  async function ask(offset: number, hostOffset = 0) {
    const script = `
      sleep 60 & H=$!
      sleep 60 & C=$!
      HS=$(cut -d' ' -f22 /proc/$H/stat)
      FAKE=$(mktemp)
      awk -v h=$H -v s=$((HS + ${offset})) '{ $4 = h; $22 = s; print }' /proc/$C/stat > $FAKE
      mount --bind $FAKE /proc/$C/stat
      "$BUN" ${JSON.stringify(join(ROOT, "test/fixtures/prove-descent.ts"))} $C $H $((HS + ${hostOffset}))
      umount /proc/$C/stat; rm -f $FAKE; kill $H $C`;
    const r = await inPidNamespace(script, { BUN: process.execPath });
    expect(r.stderr).toBe("");
    return JSON.parse(r.stdout) as { ok: boolean; reason?: string };
  }

  test("a child whose parent is the host and that started after it, or in the same tick: its descendant", async () => {
    expect((await ask(1)).ok).toBe(true);
    expect((await ask(0)).ok).toBe(true);
  });

  test("a \"child\" that started before the host: not its descendant (the host's pid was reused)", async () => {
    expect(await ask(-1)).toEqual({ ok: false, reason: "it is not a descendant of the plugin host" });
  });

  test("a host whose start time is not the recorded one: ended, its pid reused", async () => {
    expect(await ask(1, 1)).toEqual({ ok: false, reason: "the plugin host has already ended" });
    expect(await ask(1, -1)).toEqual({ ok: false, reason: "the plugin host has already ended" });
  });
});

