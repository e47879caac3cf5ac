/**
 * The one function that starts a Cortex process tool's call (plugin-host/process-run.ts), alone:
 * its command line, a limit that cannot be set refusing the call, and its whole process group
 * ended on cancel. Real processes; nothing signalled but the call's own group.
 */
import { expect, test } from "bun:test";
import { endAllCalls, launchArgv, runToolProcess } from "../../src/plugin-host/process-run.ts";
import { alive, until } from "../helpers.ts";

const base = { cwd: "/", env: { PATH: "/usr/bin:/bin" }, input: "{}\n", timeoutMs: null, maxOutputBytes: 1 << 20, started: () => {} };

test("without limits the command runs itself; with them, the shell sets them and execs it", () => {
  expect(launchArgv({ argv: ["/bin/echo", "hi"] })).toEqual(["/bin/echo", "hi"]);
  const wrapped = launchArgv({ argv: ["/bin/echo", "hi"], maxMemoryBytes: 1 << 20, maxCpuSecs: 3 });
  expect(wrapped.slice(0, 2)).toEqual(["/bin/sh", "-c"]);
  expect(wrapped[2]).toContain("ulimit -v 1024");
  expect(wrapped[2]).toContain("ulimit -S -t 3 && ulimit -H -t 4");
  expect(wrapped.slice(-3)).toEqual(["cxagent-tool", "/bin/echo", "hi"]);
});

test("a limit that cannot be set refuses the call: the command never runs", async () => {
  // ulimit refuses a CPU limit past what it can count; had echo run, its "ran" would be the answer
  const outcome = await runToolProcess({ ...base, argv: ["/bin/echo", "ran"], maxCpuSecs: 1e30, signal: new AbortController().signal });
  expect(outcome).toMatchObject({ end: "limit", which: "CPU" });
  expect(JSON.stringify(outcome)).not.toContain("ran");
});

test("cancelled, its whole process group is ended, what it started included", async () => {
  const controller = new AbortController();
  let leader = 0;
  const running = runToolProcess({
    ...base,
    argv: ["/bin/sh", "-c", "sleep 30 & echo $! ; wait"],
    signal: controller.signal,
    started: (pid) => {
      leader = pid;
    },
  });
  await until(() => leader > 0, 5000, "the call to start");
  await Bun.sleep(200);
  const children = (await Bun.$`pgrep -g ${leader}`.nothrow().text()).trim().split("\n").map(Number).filter((p) => p !== leader && p > 0);
  expect(children.length).toBeGreaterThan(0);
  controller.abort();
  expect(await running).toEqual({ end: "cancelled" });
  await until(() => !alive(leader) && children.every((p) => !alive(p)), 5000, "the group to be ended");
});

const run = (over: Partial<Parameters<typeof runToolProcess>[0]> & { argv: string[] }) => runToolProcess({ ...base, signal: new AbortController().signal, ...over });
const text = (b: Buffer) => b.toString("utf8");

test("ulimit -v counts whole KiB, rounded down, at least 1", () => {
  expect(launchArgv({ argv: ["/x"], maxMemoryBytes: 1000 })[2]).toBe("ulimit -v 1 2>/dev/null || { echo cxagent-rlimit:AS >&2; exit 125; }; exec \"$@\"");
  expect(launchArgv({ argv: ["/x"], maxMemoryBytes: 2047 })[2]).toStartWith("ulimit -v 1 ");
  expect(launchArgv({ argv: ["/x"], maxMemoryBytes: 4096 })[2]).toStartWith("ulimit -v 4 ");
  expect(launchArgv({ argv: ["/x"], maxCpuSecs: 2 })[2]).toBe("{ ulimit -S -t 2 && ulimit -H -t 3; } 2>/dev/null || { echo cxagent-rlimit:CPU >&2; exit 125; }; exec \"$@\"");
});

test("the limits are set: the command runs under them", async () => {
  const outcome = await run({ argv: ["/bin/sh", "-c", "ulimit -v; ulimit -S -t; ulimit -H -t"], maxMemoryBytes: 64 << 20, maxCpuSecs: 5 });
  expect(outcome).toMatchObject({ end: "exited", status: 0 });
  expect(text((outcome as { stdout: Buffer }).stdout)).toBe("65536\n5\n6\n");
});

test("a memory limit that cannot be set refuses the call, named AS", async () => {
  const outcome = await run({ argv: ["/bin/echo", "ran"], maxMemoryBytes: 1e30 });
  expect(outcome).toMatchObject({ end: "limit", which: "AS" });
  expect(text((outcome as { stderr: Buffer }).stderr)).toContain("cxagent-rlimit:AS");
});

test("the limit's mark counts only with the limit's exit status", async () => {
  const outcome = await run({ argv: ["/bin/sh", "-c", "echo cxagent-rlimit:AS >&2; exit 3"] });
  expect(outcome).toMatchObject({ end: "exited", status: 3 });
  expect(text((outcome as { stderr: Buffer }).stderr)).toBe("cxagent-rlimit:AS\n");
  expect(await run({ argv: ["/bin/sh", "-c", "echo other >&2; exit 125"] })).toMatchObject({ end: "exited", status: 125 });
});

test("its input on stdin, then EOF; its stdout and stderr apart; its status", async () => {
  const outcome = await run({ argv: ["/bin/sh", "-c", "cat; echo oops >&2; exit 7"], input: '{"tool":"t"}\n' });
  expect(outcome).toMatchObject({ end: "exited", status: 7 });
  const o = outcome as { stdout: Buffer; stderr: Buffer };
  expect([text(o.stdout), text(o.stderr)]).toEqual(['{"tool":"t"}\n', "oops\n"]);
});

test("its environment and working folder are the call's", async () => {
  const outcome = await run({ argv: ["/usr/bin/env"], env: { ONLY: "this" }, cwd: "/tmp" });
  expect(text((outcome as { stdout: Buffer }).stdout)).toBe("ONLY=this\n");
  const pwd = await run({ argv: ["/bin/pwd"], cwd: "/tmp" });
  expect(text((pwd as { stdout: Buffer }).stdout)).toBe("/tmp\n");
});

test("killed by a signal: the signal and its stderr", async () => {
  const outcome = await run({ argv: ["/bin/sh", "-c", "echo dying >&2; kill -SEGV $$"] });
  expect(outcome).toMatchObject({ end: "signal", signal: "SIGSEGV" });
  expect(text((outcome as { stderr: Buffer }).stderr)).toBe("dying\n");
});

test("output up to max_output_bytes is kept; one byte past it ends the group", async () => {
  const exact = await run({ argv: ["/bin/sh", "-c", "printf abc; printf d >&2"], maxOutputBytes: 4 });
  expect(exact).toMatchObject({ end: "exited", status: 0 });
  expect(text((exact as { stdout: Buffer }).stdout)).toBe("abc");
  const past = await run({ argv: ["/bin/sh", "-c", "printf abc; printf de >&2; exec sleep 30"], maxOutputBytes: 4, timeoutMs: 20_000 });
  expect(past).toEqual({ end: "too-much", bytes: 5 });
});

test("past its timeout the group is ended: timeout, with the stderr so far", async () => {
  let leader = 0;
  const began = Date.now();
  const outcome = await run({ argv: ["/bin/sh", "-c", "echo waiting >&2; sleep 30"], timeoutMs: 300, started: (pid) => void (leader = pid) });
  expect(Date.now() - began).toBeLessThan(10_000);
  expect(outcome).toMatchObject({ end: "timeout" });
  expect(text((outcome as { stderr: Buffer }).stderr)).toBe("waiting\n");
  await until(() => !alive(leader), 5000, "the leader to be ended");
});

test("already cancelled: nothing starts", async () => {
  const controller = new AbortController();
  controller.abort();
  let started = false;
  expect(await runToolProcess({ ...base, argv: ["/bin/echo"], signal: controller.signal, started: () => void (started = true) })).toEqual({ end: "cancelled" });
  expect(started).toBe(false);
});

test("a command that cannot be started: not-started, naming why", async () => {
  const missing = await run({ argv: ["/nonexistent/tool"] });
  expect(missing).toMatchObject({ end: "not-started" });
  expect((missing as { message: string }).message).toContain("ENOENT");
  const bad = await run({ argv: ["/bin/echo\0x"] });
  expect(bad).toMatchObject({ end: "not-started" });
  expect((bad as { message: string }).message).not.toBe("");
});

test("what it left running with its pipes gets a moment, then its group is ended and the call ends", async () => {
  const began = Date.now();
  const outcome = await run({ argv: ["/bin/sh", "-c", "sleep 30 & echo $!"] });
  expect(Date.now() - began).toBeLessThan(10_000);
  expect(outcome).toMatchObject({ end: "exited", status: 0 });
  const left = Number(text((outcome as { stdout: Buffer }).stdout).trim());
  expect(left).toBeGreaterThan(1);
  await until(() => !alive(left), 5000, "what it left to be ended");
});

test("its stdin is written only once it is recorded; a refused record does not stop it", async () => {
  let recorded = false;
  const outcome = await run({ argv: ["/bin/cat"], input: "in\n", started: () => Bun.sleep(500).then(() => void (recorded = true)) });
  expect(recorded).toBe(true);
  expect(text((outcome as { stdout: Buffer }).stdout)).toBe("in\n");
  const refused = await run({ argv: ["/bin/cat"], input: "still\n", started: () => Promise.reject(new Error("no record")) });
  expect(text((refused as { stdout: Buffer }).stdout)).toBe("still\n");
});

test("a command that reads nothing of a large input: its answer stands", async () => {
  const outcome = await run({ argv: ["/bin/echo", "done"], input: "x".repeat(4 << 20) });
  expect(outcome).toMatchObject({ end: "exited", status: 0 });
  expect(text((outcome as { stdout: Buffer }).stdout)).toBe("done\n");
});

test("confined: the launcher's command line runs, and is told how it ended; a refusal runs nothing", async () => {
  const ended: unknown[] = [];
  const outcome = await run({
    argv: ["/bin/echo", "inner"],
    confine: (argv) => ({ command: ["/bin/sh", "-c", 'echo launched "$@"; echo note >&2; exit 5', "launcher", ...argv], ended: (pid, exit, stderr) => ended.push([pid > 1, exit, stderr]) }),
  });
  expect(outcome).toMatchObject({ end: "exited", status: 5 });
  expect(text((outcome as { stdout: Buffer }).stdout)).toBe("launched /bin/echo inner\n");
  expect(ended).toEqual([[true, { code: 5, signal: null }, ["note", ""]]]);
  expect(await run({ argv: ["/bin/echo"], confine: () => { throw new Error("no landlock"); } })).toEqual({ end: "refused", why: "no landlock" });
});

test("endAllCalls ends every call still running, its whole group", async () => {
  let leader = 0;
  const running = run({ argv: ["/bin/sh", "-c", "sleep 30"], started: (pid) => void (leader = pid) });
  await until(() => leader > 0, 5000, "the call to start");
  endAllCalls();
  expect(await running).toEqual({ end: "signal", signal: "SIGKILL", stderr: Buffer.alloc(0) });
});
