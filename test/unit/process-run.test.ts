/**
 * The one function that starts a Cortex process tool's call (plugin-host/process-run.ts), alone:
 * its command line, a limit that cannot be set refusing the call, and its whole process group
 * ended on cancel. Real processes; nothing signalled but the call's own group.
 */
import { expect, test } from "bun:test";
import { launchArgv, runToolProcess } from "../../src/plugin-host/process-run.ts";
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
