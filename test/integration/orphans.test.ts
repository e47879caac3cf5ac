/**
 * After kill -9 of the parent, nothing a plugin left in its host's process group survives
 * (SPEC §8): registered or not, child or grandchild, adopted by init or not. The plugin host ends
 * its own group when its parent dies; where it could not (it died too), the next cxagent run ends
 * what is still in the group. A process of the test's own survives every time.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { alive, approve, cli, fixture, ROOT, tempDir, until } from "../helpers.ts";
import { bystander, groupMembers, holdSession, procStat, sessionRecords, startCli } from "../processes.ts";

const ORPHANS = fixture("leaves-orphans");

interface Left {
  host: number;
  registered: number;
  child: number;
  middle: number;
  grandchild: number;
  adopted: number;
}

/** A cxagent process caught with leaves-orphans' processes running: in a call (CLI) or in start (library). */
async function caught(moment: "call" | "start", state: string, report: string) {
  await approve(ORPHANS, state);
  const env = { CXAGENT_STATE_DIR: state, CXAGENT_FX_REPORT: report };
  const proc =
    moment === "call"
      ? startCli(["invoke", ORPHANS, "orphans"], env).proc
      : Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-session.ts"), `${ORPHANS}={"in_start":1}`], {
          cwd: ROOT,
          env: { ...process.env, ...env, CXAGENT_CONFIG_DIR: join(state, "config") },
          stdout: "ignore",
          stderr: "ignore",
        });
  await until(() => existsSync(report), 20_000, "the plugin to report the processes it started");
  const left = JSON.parse(readFileSync(report, "utf8")) as Left;
  const started = [left.registered, left.child, left.middle, left.grandchild, left.adopted];
  // What ps shows: all in the plugin host's group and session; the adopted one's parent is gone.
  for (const pid of started) expect(procStat(pid)).toMatchObject({ pgid: left.host, sid: left.host });
  expect(procStat(left.grandchild)?.ppid).toBe(left.middle);
  expect(procStat(left.adopted)?.ppid).not.toBe(left.host);
  return { proc, left, started };
}

for (const moment of ["call", "start"] as const) {
  describe(`kill -9 of the parent during ${moment}`, () => {
    test("the plugin host ends its whole group by itself, and then exits", async () => {
      using dir = tempDir();
      using outsider = bystander();
      const { proc, left, started } = await caught(moment, join(dir.path, "state"), join(dir.path, "left.json"));
      proc.kill("SIGKILL");
      await proc.exited;
      await until(() => [left.host, ...started].every((pid) => !alive(pid)), 5000, "the plugin host and everything in its group to end");
      expect(alive(outsider.pid)).toBe(true);
    });

    test("when the plugin host died with it, the next cxagent run ends what is left in the group", async () => {
      using dir = tempDir();
      using outsider = bystander();
      const state = join(dir.path, "state");
      const { proc, left, started } = await caught(moment, state, join(dir.path, "left.json"));
      // Stopped, the parent can do nothing; the host dies before it can act; then the parent dies.
      proc.kill("SIGSTOP");
      await until(() => procStat(proc.pid)?.state === "T", 5000, "the parent to stop");
      process.kill(left.host, "SIGKILL");
      await until(() => !alive(left.host) || procStat(left.host)?.state === "Z", 5000, "the plugin host to die");
      proc.kill("SIGKILL");
      await proc.exited;
      // Gone entirely, not even a zombie holding its pid: a group without its leader.
      await until(() => procStat(left.host) === null, 5000, "the plugin host to be collected");
      for (const pid of started) expect(alive(pid)).toBe(true);

      const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.code).toBe(0);
      const entries = r.json().entries as { pid: number; kind: string; outcome: string }[];
      expect(entries.map((e) => [e.pid, e.kind, e.outcome]).sort()).toEqual(
        [
          [left.registered, "child", "ended"],
          ...[left.child, left.middle, left.grandchild, left.adopted].map((pid) => [pid, "member", "ended"]),
        ].sort(),
      );
      for (const pid of started) expect(alive(pid)).toBe(false);
      expect(alive(outsider.pid)).toBe(true);
      expect(sessionRecords(state)).toEqual([]);
    });
  });
}

test("kill -9 of the parent: a process in the host's group that ignores SIGTERM is killed after the grace period", async () => {
  using dir = tempDir();
  const state = join(dir.path, "state");
  using session = await holdSession(state, [`${fixture("spawns-children")}={"count":1,"stubborn":1}`]);
  const { proc, hosts, children } = session;
  const [shell] = children as [number];
  await until(() => groupMembers(hosts[0]!).length === 3, 5000, "the child's shell to start its sleep"); // host, shell, sleep
  proc.kill("SIGKILL");
  await proc.exited;
  const members = groupMembers(hosts[0]!);
  await until(() => members.every((pid) => !alive(pid)), 5000, "the plugin host's whole group to end");
  expect(members).toContain(shell);
});
