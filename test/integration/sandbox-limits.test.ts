/**
 * Which limit stopped a sandboxed host (issue 39 point 5) comes from what the kernel says, never
 * from what the plugin printed: a 1 GiB allocation under memoryMiB 256 ends the host by SIGABRT
 * under the RLIMIT_AS read from /proc while it ran (E_LIMIT, with that evidence); a host that only
 * says "out of memory" and exits is a crash, not the memory limit. The verdict's rules, case by
 * case, are unit-tested beside (limitCause).
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { addressSpaceOf, limitCause } from "../../src/sandbox/limit-cause.ts";
import { fixture, openSession, refusal, tempDir, until } from "../helpers.ts";

const project = tempDir("cxagent-sandbox-limits-");
mkdirSync(join(project.path, "lease"));

test("a 1 GiB allocation under memoryMiB 256: E_LIMIT naming memory, with how the host ended and the rlimit in force", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  const error = await refusal(plugin.invoke("try", { op: "alloc", mib: 1024 }));
  expect(error.code).toBe("E_LIMIT");
  expect(error.details).toMatchObject({ limit: "memory", value: "256 MiB", signal: "SIGABRT" });
  // 256 MiB declared, plus the runtime's own 512 MiB: the limit read from /proc/<pid>/limits.
  expect((error.details as { how: string }).how).toBe("it ended by SIGABRT under an address-space rlimit (RLIMIT_AS) of 768 MiB");
});

test('"out of memory" on stderr and an exit is no memory limit: E_CRASHED naming the exit code', async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  const error = await refusal(plugin.invoke("try", { op: "says-oom" }));
  expect(error.code).toBe("E_CRASHED");
  expect(error.message).toContain("exit code 3");
  expect(error.message).toContain("out of memory");
});

const under = { memoryMiB: 256, processes: 16 };
const MiB = 2 ** 20;

test("limitCause: the pids cgroup's count names processes; an allocation's signal under RLIMIT_AS names memory; nothing else does", () => {
  const abort = { code: null, signal: "SIGABRT" };
  expect(limitCause({ exit: { code: 1, signal: null }, policy: under, forkRefused: true, addressSpace: 768 * MiB })).toEqual({ limit: "processes", value: "16", how: "its pids cgroup refused a fork (pids.events: max)" });
  // No processes declared: a count in a cgroup names no limit of the plugin's.
  expect(limitCause({ exit: { code: 1, signal: null }, policy: { memoryMiB: 256 }, forkRefused: true, addressSpace: 768 * MiB })).toBeNull();
  // The signal decides, whatever exit code was also reported.
  expect(limitCause({ exit: { code: 0, signal: "SIGABRT" }, policy: under, forkRefused: false, addressSpace: 768 * MiB })?.limit).toBe("memory");
  expect(limitCause({ exit: abort, policy: under, forkRefused: false, addressSpace: 768 * MiB })).toEqual({ limit: "memory", value: "256 MiB", how: "it ended by SIGABRT under an address-space rlimit (RLIMIT_AS) of 768 MiB" });
  for (const signal of ["SIGSEGV", "SIGBUS", "SIGTRAP", "SIGILL"]) expect(limitCause({ exit: { code: null, signal }, policy: under, forkRefused: false, addressSpace: 768 * MiB })?.limit).toBe("memory");
  // A kill is the parent's or the machine's, an exit code is the plugin's own: neither is the memory limit.
  for (const exit of [{ code: null, signal: "SIGKILL" }, { code: null, signal: "SIGTERM" }, { code: 1, signal: null }, { code: 0, signal: null }]) {
    expect(limitCause({ exit, policy: under, forkRefused: false, addressSpace: 768 * MiB })).toBeNull();
  }
  // No rlimit in force (not read, or unlimited), or no memoryMiB declared: no memory verdict.
  expect(limitCause({ exit: abort, policy: under, forkRefused: false, addressSpace: null })).toBeNull();
  expect(limitCause({ exit: abort, policy: {}, forkRefused: false, addressSpace: 768 * MiB })).toBeNull();
  // A clean exit is never a limit, whatever the cgroup counted.
  expect(limitCause({ exit: { code: 0, signal: null }, policy: under, forkRefused: true, addressSpace: null })).toBeNull();
});

test("addressSpaceOf reads the soft RLIMIT_AS of a running process from /proc; unlimited, or no such process, is null", async () => {
  const limited = Bun.spawn(["/bin/sh", "-c", "ulimit -S -v 1048576; exec sleep 30"], { stdout: "ignore", stderr: "ignore" });
  try {
    await until(() => addressSpaceOf(limited.pid) === 1 << 30, 5000, "the shell to lower its limit and exec sleep");
    expect(addressSpaceOf(limited.pid)).toBe(1 << 30);
  } finally {
    limited.kill();
    await limited.exited;
  }
  const unlimited = Bun.spawn(["/bin/sh", "-c", "ulimit -S -v unlimited; exec sleep 30"], { stdout: "ignore", stderr: "ignore" });
  try {
    await until(() => readFileSync(`/proc/${unlimited.pid}/cmdline`, "utf8").startsWith("sleep"), 5000, "sleep to start");
    expect(addressSpaceOf(unlimited.pid)).toBeNull();
  } finally {
    unlimited.kill();
    await unlimited.exited;
  }
  expect(addressSpaceOf(2 ** 22 + 1)).toBeNull();
});
