/**
 * src/reaper/escalate.ts where its outcome alone does not show what it did: the signals it sends
 * and the /proc reads it makes, seen by strace (kill(2) and openat(2) of a process running
 * test/unit/escalate-child.ts); the event loop left running while it waits; a process it may not
 * signal (as user nobody); and targets that can never be ours (in a private pid namespace, where
 * a mistake cannot reach the machine's pid 1).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { endProcesses, type EndOptions, type Ending } from "../../src/reaper/escalate.ts";
import type { Owned } from "../../src/reaper/ours.ts";
import { readStat, startTimeOf } from "../../src/reaper/proc.ts";
import { STRYKER, tempDir } from "../helpers.ts";
import { alive, leader, started } from "../process-groups.ts";
import { inPidNamespace, PID_NAMESPACE } from "../isolation.ts";

const CHILD = join(import.meta.dir, "escalate-child.ts");
const STRACE = Bun.spawnSync(["strace", "-o", "/dev/null", "true"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
if (!STRACE) console.error("skipping the tests of escalate.ts that read its system calls: strace is unavailable here");

const owned = (pid: number, fields: Partial<Owned> = {}): Owned => ({ pid, startTime: startTimeOf(pid)!, pgid: pid, sid: pid, ...fields });

/** endProcesses in a process of its own under strace: what it answered, the signals it sent (signal 0 left out) and the /proc reads it made. */
async function traced(targets: Owned[], options: EndOptions) {
  using dir = tempDir();
  const log = join(dir.path, "strace");
  const proc = Bun.spawn(["strace", "-f", "-qq", "-e", "trace=kill,openat", "-o", log, process.execPath, CHILD, JSON.stringify({ targets, options })], {
    env: { ...process.env, ...STRYKER },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect([code, stderr]).toEqual([0, ""]);
  const lines = readFileSync(log, "utf8").split("\n");
  const from = lines.findIndex((l) => l.includes("kill(2147483646, 0"));
  const to = lines.findIndex((l) => l.includes("kill(2147483645, 0"));
  expect(from >= 0 && to > from).toBe(true);
  const between = lines.slice(from + 1, to);
  const signals = between.flatMap((l) => {
    const m = /kill\((-?\d+), (SIG\w+)/.exec(l);
    return m ? [[Number(m[1]), m[2]!] as const] : [];
  });
  const opened = between.flatMap((l) => {
    const m = /openat\([^,]+, "(\/proc(?:\/\d+[^"]*)?)"/.exec(l);
    return m ? [m[1]!] : [];
  });
  return { endings: JSON.parse(stdout) as Ending[], signals, procReads: opened.length, tableReads: opened.filter((p) => p === "/proc").length };
}

describe.skipIf(!STRACE)("what it does, seen by strace", () => {
  test("targets the kernel says are gone, their groups too: nothing read from /proc, nothing signalled", async () => {
    const exited = Bun.spawn(["true"], { detached: true });
    const plain = Bun.spawn(["true"]);
    await Promise.all([exited.exited, plain.exited]);
    // a group whose leader exited and whose member lives on: group P, no process P
    await using orphaned = await started("sleep 60 & echo $!");
    await orphaned.proc.exited;
    const [member] = orphaned.pids as [number];
    expect(readStat(member)?.pgid).toBe(orphaned.pid);
    const targets: Owned[] = [
      { pid: exited.pid, startTime: "1", pgid: exited.pid, sid: exited.pid },
      { pid: plain.pid, startTime: "1" },
      { pid: orphaned.pid, startTime: "1" }, // recorded as leading no group: its group is not ours
    ];
    const { endings, signals, procReads } = await traced(targets, { graceMs: 1000 });
    expect(endings).toEqual(targets.map((target) => ({ target, outcome: "gone", members: [] })));
    expect({ signals, procReads }).toEqual({ signals: [], procReads: 0 });
    expect(alive(member)).toBe(true);
  });

  test("a target that can never be ours (this process) beside one the kernel says is gone: the process table is never read", async () => {
    const exited = Bun.spawn(["true"], { detached: true });
    await exited.exited;
    const gone: Owned = { pid: exited.pid, startTime: "1", pgid: exited.pid, sid: exited.pid };
    const { endings, signals, tableReads } = await traced([{ pid: "self" as unknown as number, startTime: "1" }, gone], { graceMs: 300 });
    expect(endings).toEqual([{ target: gone, outcome: "gone", members: [] }]);
    expect({ signals, tableReads }).toEqual({ signals: [], tableReads: 0 });
  });

  test("a pid another process holds now: reported reused, nothing signalled, the process table read once", async () => {
    await using l = await leader();
    const target = owned(l.pid, { startTime: String(BigInt(startTimeOf(l.pid)!) - 1n) });
    const { endings, signals, tableReads } = await traced([target], { graceMs: 300 });
    expect(endings).toEqual([{ target, outcome: "reused", members: [] }]);
    expect({ signals, tableReads }).toEqual({ signals: [], tableReads: 1 });
    expect(alive(l.pid) && alive(l.pids[0]!)).toBe(true);
  });

  test("the group a target made is signalled as a group, once a signal: SIGTERM then SIGKILL after the grace period; with none, SIGKILL alone", async () => {
    for (const graceMs of [300, 0]) {
      await using l = await leader(true);
      const target = owned(l.pid);
      const childStart = startTimeOf(l.pids[0]!)!;
      const { endings, signals } = await traced([target], { graceMs });
      expect(endings).toEqual([{ target, outcome: "ended", members: [{ pid: l.pids[0]!, startTime: childStart, outcome: "ended" }] }]);
      expect([graceMs, signals]).toEqual([graceMs, graceMs > 0 ? [[-l.pid, "SIGTERM"], [-l.pid, "SIGKILL"]] : [[-l.pid, "SIGKILL"]]]);
    }
  });

  test("a zombie target has ended: not signalled, and reported gone", async () => {
    // `sleep 0` ends and stays a zombie: the process sh became by exec never collects it
    await using s = await started("sleep 0 & echo $!; exec sleep 60");
    const [zombie] = s.pids as [number];
    for (let i = 0; i < 500 && readStat(zombie)?.state !== "Z"; i++) await Bun.sleep(10);
    const target: Owned = { pid: zombie, startTime: readStat(zombie)!.startTime };
    const { endings, signals } = await traced([target], { graceMs: 0 });
    expect(endings).toEqual([{ target, outcome: "gone", members: [] }]);
    expect(signals).toEqual([]);
  });

  test("the grace period is waited while anything lives, and no further: a group that ends within it gets no SIGKILL", async () => {
    // the leader takes 0.2 s to end after SIGTERM; its member ends at once
    await using l = await started("trap 'sleep 0.2; exit 0' TERM; sleep 60 & echo $!; wait; sleep 60");
    const target = owned(l.pid);
    const { endings, signals } = await traced([target], { graceMs: 20_000 });
    // its members: the first child, and the trap's sleep if a look caught it
    expect([endings[0]!.outcome, endings[0]!.members.every((m) => m.outcome === "ended"), endings[0]!.members.some((m) => m.pid === l.pids[0])]).toEqual(["ended", true, true]);
    expect(signals).toEqual([[-l.pid, "SIGTERM"]]);
  });

  test("a target that leads no group is signalled by its pid alone, recorded with this process's group or with none", async () => {
    const own = readStat(process.pid)!;
    const a = Bun.spawn(["sleep", "60"]);
    const b = Bun.spawn(["sleep", "60"]);
    try {
      const targets = [owned(a.pid, { pgid: own.pgid, sid: own.sid }), { pid: b.pid, startTime: startTimeOf(b.pid)! }];
      const { endings, signals } = await traced(targets, { graceMs: 0 });
      expect(endings).toEqual(targets.map((target) => ({ target, outcome: "ended", members: [] })));
      expect(signals).toEqual([
        [a.pid, "SIGKILL"],
        [b.pid, "SIGKILL"],
      ]);
    } finally {
      a.kill("SIGKILL");
      b.kill("SIGKILL");
      await Promise.all([a.exited, b.exited]);
    }
  });

  test("a target that left the group it made (setpgid into its session's): its group and itself, each signalled", async () => {
    // perl leads a group of its own, forks a member into it, then moves into the shell's group
    await using s = await started(`perl -e 'setpgrp(0, 0); my $c = fork(); if ($c == 0) { exec("sleep", "60") } setpgrp(0, getppid()); $| = 1; print "$$ $c\\n"; sleep 60' & wait`);
    const [moved, member] = s.pids as [number, number];
    expect([readStat(moved)?.pgid, readStat(member)?.pgid]).toEqual([s.pid, moved]);
    const target = owned(moved, { sid: s.pid });
    const memberStart = startTimeOf(member)!;
    const { endings, signals } = await traced([target], { graceMs: 0 });
    expect(endings).toEqual([{ target, outcome: "ended", members: [{ pid: member, startTime: memberStart, outcome: "ended" }] }]);
    expect(signals).toEqual([
      [-moved, "SIGKILL"],
      [moved, "SIGKILL"],
    ]);
  });
});

test("while it waits out the grace period, the event loop runs", async () => {
  await using l = await leader(true);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 20);
  try {
    const endings = await endProcesses([owned(l.pid)], { graceMs: 500 });
    expect(endings[0]!.outcome).toBe("ended");
  } finally {
    clearInterval(timer);
  }
  expect(ticks).toBeGreaterThanOrEqual(3);
});

test("one it may not signal (root's, ended by user nobody): still running after SIGKILL, its group's member too", async () => {
  await using l = await leader();
  // nobody must read the modules: copies in a folder anyone may enter (the checkout, or Stryker's sandbox, may be private)
  using readable = tempDir();
  chmodSync(readable.path, 0o755);
  for (const file of ["escalate.ts", "ours.ts", "proc.ts"]) copyFileSync(join(import.meta.dir, "../../src/reaper", file), join(readable.path, file));
  copyFileSync(CHILD, join(readable.path, "child.ts"));
  const target = owned(l.pid);
  const childStart = startTimeOf(l.pids[0]!)!;
  const asNobody = Bun.spawn(
    ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, join(readable.path, "child.ts"), JSON.stringify({ targets: [target], options: { graceMs: 0, verifyMs: 200 } }), readable.path],
    { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...STRYKER }, stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr] = await Promise.all([new Response(asNobody.stdout).text(), new Response(asNobody.stderr).text(), asNobody.exited]);
  expect(stderr).toBe("");
  expect(JSON.parse(stdout)).toEqual([{ target, outcome: "still-running", members: [{ pid: l.pids[0]!, startTime: childStart, outcome: "still-running" }] }]);
  expect(alive(l.pid) && alive(l.pids[0]!)).toBe(true);
});

test.skipIf(!PID_NAMESPACE)("targets that can never be ours (this process, its parent, pid 1, 0, -1; in a private pid namespace): dropped, nothing signalled", async () => {
  const targets = ["self", "parent", 1, 0, -1].map((pid) => ({ pid, startTime: "real", pgid: pid, sid: pid }));
  const run = await inPidNamespace(`setsid ${process.execPath} ${CHILD} "$TARGETS"; echo "exit $?"`, { TARGETS: JSON.stringify({ targets, options: { graceMs: 200, verifyMs: 200 } }) });
  expect(run.stderr).not.toContain("pid 1 got SIGTERM");
  expect(run.stdout).toBe("[]\nexit 0\n");
}, 30_000);
