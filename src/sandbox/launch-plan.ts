/**
 * The launcher's plan, worked out whole here in TypeScript (in the parent, before the host is
 * spawned; or in `cxagent __sandbox`): what to make, which paths with which rights, which TCP
 * ports, the seccomp program's bytes, the rlimits, the host's extra environment. It is a list of
 * words (ffi/launcher/sandbox-launcher.c describes each) that the native launcher, or without it
 * launch.ts through bun:ffi, carries out in order on one thread before it execve's the host. The
 * launcher decides nothing: every restriction is written, or left out, here.
 */
import { readHostArgv } from "../protocol/host-args.ts";
import type { SandboxPolicy } from "../protocol/sandbox-policy.ts";
import { RLIMIT, syscalls } from "./kernel.ts";
import { ACCESS, landlockWords } from "./landlock.ts";
import type { SandboxPlan } from "./plan.ts";
import { checkoutRoot, RUNTIME_ADDRESS_SPACE_MIB, RUNTIME_JIT_RESERVATION_MIB, RUNTIME_TASKS, runtimeFiles } from "./runtime-files.ts";
import { filterHex } from "./seccomp.ts";
import { TRANSPILER_CACHE_ENV, transpilerCache } from "./transpiled.ts";

/** The host's ${tmp} as the plan names it; the launcher replaces it with `<tmpBase>/sandbox-<its pid>`. */
export const TMP = "${tmp}";

// Worked out once per process: they depend on nothing a load changes (the plan is made as each host is spawned).
const runtimeMemo = new Map<string, ReturnType<typeof runtimeFiles>>();
const runtimeFilesOf = (executable: string) => runtimeMemo.get(executable) ?? runtimeMemo.set(executable, runtimeFiles(executable, checkoutRoot())).get(executable)!;

/** The words that confine `command` (the host's argv, an absolute path first) as `plan` says, in the order they are carried out. */
export function launchWords(policy: SandboxPolicy, plan: SandboxPlan, command: readonly string[]): string[] {
  const applied = new Set(plan.layers);
  const words = ["tmp", policy.tmpBase];
  const host = readHostArgv(command.slice(command.indexOf("__host") + 1).filter((a) => !a.startsWith("--shim=")));
  if (applied.has("pids")) words.push("cgroup", plan.pidsBase!, String(policy.processes! + RUNTIME_TASKS + ("error" in host ? 16 : host.poolCap)));
  // From a checkout: cxagent's own transpiled code, which this process wrote and the host may only read.
  const transpiled = transpilerCache(policy.tmpBase, command);
  if (applied.has("netns")) words.push("netns");
  words.push("nnp");
  if (applied.has("landlock")) {
    const paths = new Map<string, bigint>();
    const grant = (path: string, rights: bigint) => paths.set(path, (paths.get(path) ?? 0n) | rights);
    const runtime = runtimeFilesOf(command[0]!.startsWith("/") ? command[0]! : process.execPath);
    for (const p of runtime.execute) grant(p, ACCESS.execute);
    for (const p of runtime.read) grant(p, ACCESS.read);
    for (const p of runtime.list) grant(p, ACCESS.list);
    for (const p of runtime.device) grant(p, ACCESS.device);
    for (const p of policy.read) grant(p, ACCESS.read);
    for (const p of policy.execute ?? []) grant(p, ACCESS.execute);
    for (const p of policy.write) grant(p, ACCESS.write);
    grant(TMP, ACCESS.write);
    if (transpiled !== null) grant(transpiled, ACCESS.read);
    // A module's host writes its approved files into the snapshot folder; its Workers may start from the named folders.
    if (!("error" in host)) {
      if (host.snapshot) grant(host.snapshot, ACCESS.write);
      for (const folder of host.workerFolders ?? []) grant(folder, ACCESS.read);
    }
    const tcp = policy.net === "any" ? null : policy.net === "none" ? { connect: [], bind: [] } : { connect: policy.net.connect.map((p) => p.port), bind: policy.net.bind.map((p) => p.port) };
    words.push(...landlockWords(plan.landlockAbi, { paths, tcp: applied.has("landlock-net") ? tcp : null }));
  }
  if (applied.has("seccomp")) words.push("seccomp", filterHex(syscalls()!, policy.net === "none"));
  words.push("env", `CXAGENT_SANDBOX=${plan.layers.join("+")}`);
  if (transpiled !== null) words.push("env", `${TRANSPILER_CACHE_ENV}=${transpiled}`);
  // Under RLIMIT_AS the runtime's default JIT reservation fails and it runs without a JIT, where bun:ffi cannot load the plugin.
  if (policy.memoryMiB !== undefined) words.push("env", `BUN_JSC_jitMemoryReservationSize=${RUNTIME_JIT_RESERVATION_MIB << 20}`);
  // Last before execve: under a low RLIMIT_AS a running Bun could no longer reserve memory.
  const limits: [string, number, bigint][] = [["CORE", RLIMIT.CORE, 0n]];
  if (policy.memoryMiB !== undefined) limits.push(["AS", RLIMIT.AS, BigInt(policy.memoryMiB + RUNTIME_ADDRESS_SPACE_MIB) << 20n]);
  if (policy.openFiles !== undefined) limits.push(["NOFILE", RLIMIT.NOFILE, BigInt(policy.openFiles)]);
  for (const [name, resource, value] of limits) words.push("rlimit", String(resource), String(value), name);
  return words;
}
