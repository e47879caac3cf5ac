/**
 * The launcher: `cxagent __sandbox <policy JSON> <host command...>`. On this one thread, before
 * any plugin byte exists in the process, it makes the host's ${tmp}, joins a pids cgroup, sets the
 * rlimits, enters an empty network namespace (net "none", where it may), sets no_new_privs,
 * restricts itself with Landlock, installs the seccomp filter, and execve's the plugin host, which
 * inherits all of it (Landlock and seccomp applied from a running Bun hold for the calling thread
 * only; the execve leaves no other thread). Any step that fails refuses: one line on stderr
 * (SANDBOX_REFUSED_LINE, naming the layer) and exit SANDBOX_REFUSED_EXIT. Never runs the host
 * less confined than planned.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { readHostArgv } from "../protocol/host-args.ts";
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE, type SandboxLayer, type SandboxPolicy } from "../protocol/sandbox-policy.ts";
import { joinPidsCgroup } from "./cgroup.ts";
import { execve, lastError, libc, PR_SET_NO_NEW_PRIVS, RLIMIT, setLimit, syscalls } from "./kernel.ts";
import { ACCESS, restrictThread } from "./landlock.ts";
import { planSandbox, probeKernel } from "./plan.ts";
import { installFilter } from "./seccomp.ts";
import { checkoutRoot, RUNTIME_ADDRESS_SPACE_MIB, RUNTIME_JIT_RESERVATION_MIB, RUNTIME_TASKS, runtimeFiles } from "./runtime-files.ts";

const CLONE_NEWNET = 0x40000000;

function refuse(layer: SandboxLayer | "launcher", why: string): never {
  process.stderr.write(`${SANDBOX_REFUSED_LINE}${JSON.stringify({ layer, why })}\n`);
  process.exit(SANDBOX_REFUSED_EXIT);
}

/** The host's ${tmp}: `<tmpBase>/sandbox-<pid>`, which the parent removes when the host has ended. */
export function tmpOf(tmpBase: string, pid: number): string {
  return join(tmpBase, `sandbox-${pid}`);
}

export function runLauncher(argv: readonly string[]): never {
  const [policyText, ...command] = argv;
  let policy: SandboxPolicy;
  try {
    policy = JSON.parse(policyText ?? "") as SandboxPolicy;
  } catch {
    return refuse("launcher", "usage: cxagent __sandbox <policy JSON> <host command...>");
  }
  if (command.length === 0) refuse("launcher", "no host command was given");
  const plan = planSandbox(policy, probeKernel());
  if (plan.missing.length) refuse(plan.missing[0]!.layer, plan.missing[0]!.why);
  const tmp = tmpOf(policy.tmpBase, process.pid);
  const expand = (path: string) => (path === "${tmp}" ? tmp : path.startsWith("${tmp}/") ? tmp + path.slice(6) : path);
  try {
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
  } catch (error) {
    refuse("landlock", `the host's private folder ${tmp} could not be made: ${(error as Error).message}`);
  }
  const applied = new Set(plan.layers);
  const host = readHostArgv(command.slice(command.indexOf("__host") + 1).filter((a) => !a.startsWith("--shim=")));
  if (applied.has("pids")) {
    try {
      joinPidsCgroup(plan.pidsBase!, policy.processes! + RUNTIME_TASKS + ("error" in host ? 16 : host.poolCap));
    } catch (error) {
      refuse("pids", `the pids cgroup could not be made: ${(error as Error).message}`);
    }
  }
  if (applied.has("netns") && libc().unshare(CLONE_NEWNET) !== 0) refuse("netns", `unshare(CLONE_NEWNET) failed: ${lastError().text}`);
  if (libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) !== 0) refuse("no_new_privs", `prctl(PR_SET_NO_NEW_PRIVS) failed: ${lastError().text}`);
  if (applied.has("landlock")) {
    const paths = new Map<string, bigint>();
    const grant = (path: string, rights: bigint) => paths.set(path, (paths.get(path) ?? 0n) | rights);
    const runtime = runtimeFiles(command[0]!.startsWith("/") ? command[0]! : process.execPath, checkoutRoot());
    for (const p of runtime.execute) grant(p, ACCESS.execute);
    for (const p of runtime.read) grant(p, ACCESS.read);
    for (const p of runtime.list) grant(p, ACCESS.list);
    for (const p of runtime.device) grant(p, ACCESS.device);
    for (const p of policy.read) grant(expand(p), ACCESS.read);
    for (const p of policy.execute ?? []) grant(expand(p), ACCESS.execute);
    for (const p of policy.write) grant(expand(p), ACCESS.write);
    grant(tmp, ACCESS.write);
    // A module's host writes its approved files into the snapshot folder; its Workers may start from the named folders.
    if (!("error" in host)) {
      if (host.snapshot) grant(host.snapshot, ACCESS.write);
      for (const folder of host.workerFolders ?? []) grant(folder, ACCESS.read);
    }
    const tcp = policy.net === "any" ? null : policy.net === "none" ? { connect: [], bind: [] } : { connect: policy.net.connect.map((p) => p.port), bind: policy.net.bind.map((p) => p.port) };
    try {
      restrictThread(plan.landlockAbi, { paths, tcp: applied.has("landlock-net") ? tcp : null });
    } catch (error) {
      refuse("landlock", (error as Error).message);
    }
  }
  if (applied.has("seccomp")) {
    try {
      installFilterFor(policy);
    } catch (error) {
      refuse("seccomp", (error as Error).message);
    }
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  env.TMPDIR = tmp;
  env.CXAGENT_SANDBOX = plan.layers.join("+");
  // Under RLIMIT_AS the runtime's default JIT reservation fails and it runs without a JIT, where bun:ffi cannot load the plugin.
  if (policy.memoryMiB !== undefined) env.BUN_JSC_jitMemoryReservationSize = String(RUNTIME_JIT_RESERVATION_MIB << 20);
  // Last before execve: under a low RLIMIT_AS this running Bun could no longer reserve memory.
  const limits: [string, number, bigint][] = [["CORE", RLIMIT.CORE, 0n]];
  if (policy.memoryMiB !== undefined) limits.push(["AS", RLIMIT.AS, BigInt(policy.memoryMiB + RUNTIME_ADDRESS_SPACE_MIB) << 20n]);
  if (policy.openFiles !== undefined) limits.push(["NOFILE", RLIMIT.NOFILE, BigInt(policy.openFiles)]);
  let unset: string | null = null;
  const failed = execve(command[0]!, command, env, () => {
    for (const [name, resource, value] of limits) if (unset === null && !setLimit(resource, value)) unset = name;
  });
  if (unset !== null) refuse("rlimits", `setrlimit(RLIMIT_${unset}) failed`);
  return refuse("launcher", `execve(${command[0]}) failed: ${failed.text}`);
}

function installFilterFor(policy: SandboxPolicy): void {
  installFilter(syscalls()!, policy.net === "none");
}
