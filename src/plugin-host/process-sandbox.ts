/**
 * A Cortex process plugin's kernel sandbox (issue 43): its `[cxagent.sandbox]` confines each
 * call's process, started through the sandbox launcher by `sandboxedCommand` (sandbox/command.ts),
 * as any sandboxed plugin host is. The parent resolved the declaration (with config.json's) into
 * a policy and planned it already (a layer this kernel lacks refused the load, E_SANDBOX); it
 * hands the host the launcher's command and the policy (--call-sandbox, protocol/host-args.ts).
 * Here the policy gains what the plugin's commands need and nothing more: the approved snapshot
 * they run from readable and executable, and, where allow_host_paths lets a tool name them, its
 * outside command executable and its outside working folder readable. Each call gets a ${tmp} of
 * its own (the launcher makes one per process; `ended` removes it, and the call's pids cgroup).
 */
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE, type SandboxPolicy } from "../protocol/sandbox-policy.ts";
import { type Sandboxed, sandboxedCommand } from "../sandbox/command.ts";

export interface CallSandbox {
  /** The cxagent command that runs `__sandbox` (the parent's host command up to `__host`). */
  launcher: string[];
  policy: SandboxPolicy;
}

/** The --call-sandbox argument; an error naming what is wrong with it. */
export function readCallSandbox(text: string): CallSandbox | { error: string } {
  try {
    const value = JSON.parse(text) as Partial<CallSandbox>;
    if (Array.isArray(value.launcher) && value.launcher.every((a) => typeof a === "string") && value.policy && typeof value.policy === "object") {
      return { launcher: value.launcher, policy: value.policy };
    }
  } catch {
    // said below
  }
  return { error: "--call-sandbox is not {\"launcher\": [...], \"policy\": {...}}" };
}

/** The calls' policy: the parent's, with the snapshot the commands run from, and the outside paths the manifest allows. */
export function callPolicy(base: SandboxPolicy, snapshot: string, outside: { commands: string[]; folders: string[] }): SandboxPolicy {
  return { ...base, read: [...base.read, snapshot, ...outside.folders], execute: [...(base.execute ?? []), snapshot, ...outside.commands] };
}

/**
 * One call's command line through the launcher; its `ended` cleans up after the call's process.
 * The launcher reads a plugin host's options after a `__host` word of the command it starts (and
 * grants the snapshot folder they name), so a tool's command line holding that word is refused:
 * a manifest's args must not widen what its calls may touch.
 */
export function sandboxCall(sandbox: CallSandbox, policy: SandboxPolicy, argv: readonly string[]): Sandboxed {
  if (argv.includes("__host")) throw new Error("its command line holds the word __host, which the sandbox launcher reads as a plugin host's options; a sandboxed tool's command and args must not");
  return sandboxedCommand(argv, policy, undefined, sandbox.launcher);
}

/** The launcher's refusal on a call's stderr (a layer that could not be applied), or null. */
export function launcherRefusal(status: number, stderr: string): { layer: string; why: string } | null {
  if (status !== SANDBOX_REFUSED_EXIT) return null;
  const line = stderr.split("\n").find((l) => l.startsWith(SANDBOX_REFUSED_LINE));
  if (!line) return null;
  try {
    const said = JSON.parse(line.slice(SANDBOX_REFUSED_LINE.length)) as { layer?: unknown; why?: unknown };
    return { layer: String(said.layer), why: String(said.why) };
  } catch {
    return null;
  }
}
