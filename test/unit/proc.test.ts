/**
 * src/reaper/proc.ts against the real /proc and kill(2): a process's fields read past a command
 * name holding spaces and parentheses, start times compared as numbers, a pid's identity (the
 * same process, a reused pid, gone or a zombie), and whether a process or group may exist —
 * where "may" also covers one this user may not signal (asked from a process dropped to nobody).
 */
import { expect, test } from "bun:test";
import { chmodSync, copyFileSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { groupMayHaveMembers, identify, processMayExist, processTable, readStat, startedBefore, startTimeOf } from "../../src/reaper/proc.ts";
import { STRYKER, tempDir } from "../helpers.ts";

/** Field n (1-based) of /proc/<pid>/stat, counted after the command's closing parenthesis. */
const field = (pid: number, n: number) => readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[n - 3]!;

async function reaped(proc: { exited: Promise<number> }) {
  await proc.exited;
}

test("a process's state, parent, group, session and start time, past a command name with spaces and parentheses", async () => {
  using dir = tempDir();
  const odd = join(dir.path, "a) b ) (c");
  copyFileSync("/bin/sleep", odd);
  const child = Bun.spawn([odd, "30"], { detached: true });
  try {
    const s = readStat(child.pid)!;
    expect(readFileSync(`/proc/${child.pid}/stat`, "utf8")).toContain("(a) b ) (c)");
    expect(s).toEqual({ pid: child.pid, state: field(child.pid, 3), ppid: process.pid, pgid: child.pid, sid: child.pid, startTime: field(child.pid, 22) });
    expect(["S", "R", "D"]).toContain(s.state);
    expect(startTimeOf(child.pid)).toBe(s.startTime);
    // not detached: this process's group and session
    const own = readStat(process.pid)!;
    const plain = Bun.spawn(["sleep", "30"]);
    expect(readStat(plain.pid)).toEqual({ pid: plain.pid, state: field(plain.pid, 3), ppid: process.pid, pgid: own.pgid, sid: own.sid, startTime: field(plain.pid, 22) });
    plain.kill("SIGKILL");
    await reaped(plain);
  } finally {
    child.kill("SIGKILL");
    await reaped(child);
  }
});

test("no such process: null; nor for a pid that is not a positive whole number", async () => {
  const gone = Bun.spawn(["true"]);
  await gone.exited;
  expect(readStat(gone.pid)).toBeNull();
  expect(startTimeOf(gone.pid)).toBeNull();
  for (const pid of [0, -1, 1.5, Number.NaN]) expect(readStat(pid)).toBeNull();
  expect(readStat(1)?.pid).toBe(1);
});

test("start times compare as numbers, past 2^53 too", () => {
  expect(startedBefore("9", "10")).toBe(true);
  expect(startedBefore("10", "9")).toBe(false);
  expect(startedBefore("10", "10")).toBe(false);
  expect(startedBefore("9007199254740992", "9007199254740993")).toBe(true);
  expect(startedBefore("9007199254740993", "9007199254740992")).toBe(false);
});

test("a pid's identity: the same process, a reused pid (another start time), or gone", async () => {
  const child = Bun.spawn(["sleep", "30"]);
  const start = startTimeOf(child.pid)!;
  expect(identify(child.pid, start)).toBe("same");
  expect(identify(child.pid, String(BigInt(start) + 1n))).toBe("reused");
  child.kill("SIGKILL");
  await child.exited;
  expect(identify(child.pid, start)).toBe("gone");
});

test("a zombie is gone, though /proc still shows it", async () => {
  // The child ends only once its parent has become `sleep`, which never reaps it (or is gone). With
  // `sleep 0 &` it could end before the exec, and the shell reaped it: seen once in CI.
  const script = '(while [ -e /proc/$$ ] && [ "$(cat /proc/$$/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 30';
  const shell = Bun.spawn(["sh", "-c", script], { stdout: "pipe" });
  try {
    const reader = shell.stdout.getReader();
    const pid = Number(new TextDecoder().decode((await reader.read()).value).trim());
    for (let i = 0; i < 500 && readStat(pid)?.state !== "Z"; i++) await Bun.sleep(10);
    const s = readStat(pid)!;
    expect(s.state).toBe("Z");
    expect(identify(pid, s.startTime)).toBe("gone");
    expect(processTable().get(pid)).toEqual(s); // the table shows zombies
  } finally {
    shell.kill("SIGKILL");
    await shell.exited;
  }
});

test("the process table: every process /proc shows, by pid, read as readStat reads it", () => {
  const table = processTable();
  const pids = readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number);
  expect(table.get(process.pid)).toEqual(readStat(process.pid)!);
  expect(table.get(1)).toEqual(readStat(1)!);
  for (const key of table.keys()) expect(Number.isInteger(key) && key > 0).toBe(true);
  // processes come and go while it is read: nearly all of those listed are there
  expect(pids.filter((p) => table.has(p)).length).toBeGreaterThan(pids.length / 2);
});

test("a process or group may exist: yes while it does, no once it is reaped; never asked of pid or group 0, 1 or below", async () => {
  const child = Bun.spawn(["sleep", "30"], { detached: true });
  expect(processMayExist(child.pid)).toBe(true);
  expect(groupMayHaveMembers(child.pid)).toBe(true);
  child.kill("SIGKILL");
  await child.exited;
  expect(processMayExist(child.pid)).toBe(false);
  expect(groupMayHaveMembers(child.pid)).toBe(false);
  // a process that leads no group: no group of its pid
  const member = Bun.spawn(["sleep", "30"]);
  expect(processMayExist(member.pid)).toBe(true);
  expect(groupMayHaveMembers(member.pid)).toBe(false);
  member.kill("SIGKILL");
  await member.exited;
  // kill(0) and kill(-1) would succeed: they mean this group and every process
  for (const n of [1, 0, -1, 2.5]) {
    expect([n, processMayExist(n)]).toEqual([n, false]);
    expect([n, groupMayHaveMembers(n)]).toEqual([n, false]);
  }
});

test("one this user may not signal (EPERM) may still exist: asked as nobody about root's", async () => {
  const child = Bun.spawn(["sleep", "30"], { detached: true });
  // nobody must read the module: a copy in a folder anyone may enter (the checkout, or Stryker's sandbox, may be private)
  using readable = tempDir();
  chmodSync(readable.path, 0o755);
  const module = join(readable.path, "proc.ts");
  copyFileSync(join(import.meta.dir, "../../src/reaper/proc.ts"), module);
  chmodSync(module, 0o644);
  try {
    const code = `import { groupMayHaveMembers, processMayExist } from ${JSON.stringify(module)};
const n = Number(process.argv[1]);
console.log(JSON.stringify([processMayExist(n), groupMayHaveMembers(n), processMayExist(2 ** 22 + 7), groupMayHaveMembers(2 ** 22 + 7)]));`;
    const asNobody = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, "-e", code, String(child.pid)], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...STRYKER },
      stderr: "pipe",
    });
    expect(asNobody.stderr.toString()).toBe("");
    expect(JSON.parse(asNobody.stdout.toString())).toEqual([true, true, false, false]);
  } finally {
    child.kill("SIGKILL");
    await child.exited;
  }
});
