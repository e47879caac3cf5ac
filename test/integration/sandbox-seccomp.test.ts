/**
 * The seccomp filter as the kernel runs it (issue 39 point 3): test/fixtures/programs/seccomp-probe.c
 * tries every call the filter refuses, with arguments the kernel would reject harmlessly, started
 * through the native launcher with the words the plan writes for a plugin host (launch-plan.ts),
 * so a plan that dropped the filter fails here too. Unconfined, the same calls meet other errors:
 * the EPERMs below are the filter's. The program's answers for every call number, architecture and
 * argument: test/unit/sandbox-seccomp.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { SandboxPolicy } from "../../src/protocol/sandbox.ts";
import { launchWords } from "../../src/sandbox/launch-plan.ts";
import { nativeLauncher } from "../../src/sandbox/native-launcher.ts";
import { planSandbox, probeKernel } from "../../src/sandbox/plan.ts";
import { ROOT, tempDir } from "../helpers.ts";

const dir = tempDir("cxagent-seccomp-");
const probe = join(dir.path, "seccomp-probe");
beforeAll(() => {
  const cc = Bun.spawnSync([process.env.CC ?? "cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", probe, join(ROOT, "test/fixtures/programs/seccomp-probe.c")]);
  expect(cc.stderr.toString()).toBe("");
  expect(cc.exitCode).toBe(0);
});
afterAll(() => dir[Symbol.dispose]());

const EPERM = 1, EINVAL = 22, ENOSYS = 38;
const REFUSED = [
  "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "mount", "umount2", "kexec_load", "kexec_file_load",
  "unshare", "setns", "pivot_root", "chroot", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
  "reboot", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "open_tree",
  "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "io_uring_setup", "io_uring_enter",
  "io_uring_register", "clone_newns", "clone_newcgroup", "clone_newuts", "clone_newipc", "clone_newuser",
  "clone_newpid", "clone_newnet",
];

/** The probe's answers (call name → errno, 0: it worked), run as `command` before it. */
function answers(command: string[]): Record<string, number> {
  const run = Bun.spawnSync([...command, probe], { stdout: "pipe", stderr: "pipe" });
  expect(run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
  return Object.fromEntries(run.stdout.toString().trim().split("\n").map((line) => [line.split(" ")[0]!, Number(line.split(" ")[1])]));
}

/** The launcher with the words the plan writes for a host under `net`. */
function confined(net: SandboxPolicy["net"]): string[] {
  const policy: SandboxPolicy = { plugin: "probe", read: [], execute: [dir.path], write: [], net, tmpBase: dir.path, accepts: [] };
  const plan = planSandbox(policy, probeKernel());
  expect(plan.layers).toContain("seccomp");
  return [nativeLauncher(dir.path)!, ...launchWords(policy, plan, [probe]), "--"];
}

test("unconfined, the probe's calls meet the kernel's own errors, not EPERM", () => {
  const got = answers([]);
  expect(got.unshare).toBe(0); // unshare(0) does nothing, and succeeds
  expect(got.clone3).toBe(EINVAL);
  expect(got.socket_inet).toBe(0);
  expect(REFUSED.filter((name) => got[name] === EPERM)).toEqual([]);
});

test('confined with net "none": every call that reaches past the plugin\'s process fails with EPERM, clone3 with ENOSYS, and only AF_UNIX sockets are made', () => {
  const got = answers(confined("none"));
  expect(Object.fromEntries(REFUSED.map((name) => [name, got[name]]))).toEqual(Object.fromEntries(REFUSED.map((name) => [name, EPERM])));
  expect(got.clone3).toBe(ENOSYS); // the C library then falls back to clone, whose flags the filter reads
  expect(got.clone_plain).toBe(EINVAL); // a clone asking for no namespace reaches the kernel
  expect([got.socket_unix, got.socketpair_unix, got.getpid]).toEqual([0, 0, 0]);
  expect([got.socket_inet, got.socket_inet6, got.socket_netlink, got.socketpair_inet]).toEqual([EPERM, EPERM, EPERM, EPERM]);
  if (process.arch === "x64") expect(got.x32_getpid).toBe(ENOSYS); // refused by the filter where the kernel has x32
});

test("confined with the network declared: the same calls are refused, and sockets of any family are made", () => {
  const got = answers(confined("any"));
  expect(REFUSED.filter((name) => got[name] !== EPERM)).toEqual([]);
  expect(got.clone3).toBe(ENOSYS);
  expect([got.socket_unix, got.socket_inet, got.socket_inet6]).toEqual([0, 0, 0]);
});
