/**
 * The launcher: `cxagent __sandbox <policy JSON> <host command...>`. It works out the plan's words
 * (launch-plan.ts) and hands them to the native launcher (native-launcher.ts), which carries them
 * out and execve's the host. Where there is no native launcher (an installed package, which ships
 * no build), it carries them out itself, on this one thread, through bun:ffi: makes the host's
 * ${tmp}, joins a pids cgroup, enters an empty network namespace (net "none", where it may), sets
 * no_new_privs, restricts itself with Landlock, installs the seccomp filter, sets the rlimits and
 * execve's the plugin host, which inherits all of it (Landlock and seccomp applied from a running
 * Bun hold for the calling thread only; the execve leaves no other thread). Any step that fails
 * refuses: one line on stderr (SANDBOX_REFUSED_LINE, naming the layer) and exit
 * SANDBOX_REFUSED_EXIT. Never runs the host less confined than planned.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE, type SandboxLayer, type SandboxPolicy } from "../protocol/sandbox-policy.ts";
import { joinPidsCgroup } from "./cgroup.ts";
import { execve, lastError, libc, PR_SET_NO_NEW_PRIVS, setLimit } from "./kernel.ts";
import { addPathRule, addPortRule, createRuleset, restrictSelf } from "./landlock.ts";
import { launchWords, TMP } from "./launch-plan.ts";
import { nativeLauncher } from "./native-launcher.ts";
import { planSandbox, probeKernel } from "./plan.ts";
import { installFilter } from "./seccomp.ts";

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
  const words = launchWords(policy, plan, command);
  let native: string | null = null;
  try {
    native = nativeLauncher(policy.tmpBase);
  } catch (error) {
    refuse("launcher", (error as Error).message);
  }
  if (native !== null) {
    const failed = execve(native, [native, ...words, "--", ...command], env({}));
    return refuse("launcher", `execve(${native}) failed: ${failed.text}`);
  }
  return carryOut(words, command);
}

function env(extra: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return Object.assign(out, extra);
}

/** The plan's words carried out through bun:ffi, as ffi/launcher/sandbox-launcher.c does; then execve. */
function carryOut(words: readonly string[], command: readonly string[]): never {
  let tmp = "";
  let ruleset = -1;
  let fileRights = 0n;
  const extra: Record<string, string> = {};
  const limits: [string, number, bigint][] = [];
  const expand = (path: string) => (path === TMP ? tmp : path.startsWith(`${TMP}/`) ? tmp + path.slice(TMP.length) : path);
  for (let i = 0; i < words.length; ) {
    const word = words[i++]!;
    const arg = () => words[i++]!;
    try {
      if (word === "tmp") {
        tmp = tmpOf(arg(), process.pid);
        try {
          mkdirSync(tmp, { recursive: true, mode: 0o700 });
        } catch (error) {
          refuse("landlock", `the host's private folder ${tmp} could not be made: ${(error as Error).message}`);
        }
        extra.TMPDIR = tmp;
      } else if (word === "cgroup") {
        const [base, max] = [arg(), Number(arg())];
        try {
          joinPidsCgroup(base, max);
        } catch (error) {
          refuse("pids", `the pids cgroup could not be made: ${(error as Error).message}`);
        }
      } else if (word === "netns") {
        if (libc().unshare(CLONE_NEWNET) !== 0) refuse("netns", `unshare(CLONE_NEWNET) failed: ${lastError().text}`);
      } else if (word === "nnp") {
        if (libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) !== 0) refuse("no_new_privs", `prctl(PR_SET_NO_NEW_PRIVS) failed: ${lastError().text}`);
      } else if (word === "landlock") {
        const [fs, net, scoped] = [BigInt(arg()), BigInt(arg()), BigInt(arg())];
        fileRights = BigInt(arg());
        ruleset = createRuleset(fs, net, scoped);
      } else if (word === "path") {
        const rights = BigInt(arg());
        addPathRule(ruleset, rights, expand(arg()), fileRights);
      } else if (word === "port") {
        const right = BigInt(arg());
        addPortRule(ruleset, right, Number(arg()));
      } else if (word === "restrict") {
        restrictSelf(ruleset);
        ruleset = -1;
      } else if (word === "seccomp") {
        const hex = arg();
        try {
          installFilter(hex);
        } catch (error) {
          refuse("seccomp", (error as Error).message);
        }
      } else if (word === "env") {
        const pair = arg();
        extra[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1);
      } else if (word === "rlimit") {
        const [resource, value, name] = [Number(arg()), BigInt(arg()), arg()];
        limits.push([name, resource, value]);
      } else refuse("launcher", `an unknown word in the plan: ${word}`);
    } catch (error) {
      refuse("landlock", (error as Error).message);
    }
  }
  if (ruleset >= 0) refuse("launcher", "the landlock ruleset was never applied (no restrict word)");
  // Last before execve: under a low RLIMIT_AS this running Bun could no longer reserve memory.
  let unset: string | null = null;
  const failed = execve(command[0]!, command, env(extra), () => {
    for (const [name, resource, value] of limits) if (unset === null && !setLimit(resource, value)) unset = name;
  });
  if (unset !== null) refuse("rlimits", `setrlimit(RLIMIT_${unset}) failed`);
  return refuse("launcher", `execve(${command[0]}) failed: ${failed.text}`);
}
