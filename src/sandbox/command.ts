/**
 * The parent's side of the sandbox: from a plugin's declaration (and the user's floor) to the
 * command that starts its host through the launcher, the layers that will hold, and, once the
 * host has ended, what a limit did to it. `sandboxedCommand` is the one entry another kind of
 * plugin host (a per-call process, say) calls with a declaration to be started the same way.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../errors.ts";
import type { SandboxDeclaration, SandboxLayer, SandboxPolicy } from "../protocol/sandbox.ts";
import { endPidsCgroup, sweepPidsCgroups } from "./cgroup.ts";
import { tmpOf } from "./launch.ts";
import { launchWords } from "./launch-plan.ts";
import { nativeLauncher } from "./native-launcher.ts";
import { addressSpaceOf, limitCause } from "./limit-cause.ts";
import { type KernelOffer, planSandbox, probeKernel } from "./plan.ts";

export interface SandboxContext {
  plugin: string;
  /** The working directory: ${project}. */
  project: string;
  /** The plugin's folder: ${plugin}. */
  folder: string;
  /** The state folder: ${cache} is `<state>/cache/<plugin>`. */
  stateDir: string;
  /** A private folder of this user's, where each host's ${tmp} is made. */
  tmpBase: string;
  /** Layers the user accepts missing for this plugin. */
  accepts?: SandboxLayer[];
}

/** The declaration with ${project}, ${plugin} and ${cache} resolved (${tmp} is the launcher's), and the plugin's folder readable. */
export function policyOf(declaration: SandboxDeclaration, c: SandboxContext): SandboxPolicy {
  const values: Record<string, string> = { project: c.project, plugin: c.folder, cache: join(c.stateDir, "cache", c.plugin) };
  const expand = (path: string) => path.replace(/^\$\{(project|plugin|cache)\}/, (_m, name: string) => values[name]!);
  return {
    plugin: c.plugin,
    read: [c.folder, ...declaration.fs.read.map(expand)],
    // ${plugin} is read-only, whatever a write names.
    write: declaration.fs.write.filter((p) => !p.startsWith("${plugin}")).map(expand),
    net: declaration.net,
    ...(declaration.processes !== undefined ? { processes: declaration.processes } : {}),
    ...(declaration.memoryMiB !== undefined ? { memoryMiB: declaration.memoryMiB } : {}),
    ...(declaration.openFiles !== undefined ? { openFiles: declaration.openFiles } : {}),
    tmpBase: c.tmpBase,
    accepts: c.accepts ?? [],
  };
}

export interface Sandboxed {
  /** The command that starts the host through the launcher. */
  readonly command: string[];
  /** The command with `args` after the host command's (the plan grants what they name: a module's snapshot folder, say). */
  commandFor(args: readonly string[]): string[];
  /** The layers that will be applied ("landlock+seccomp+…" in reports). */
  layers: SandboxLayer[];
  policy: SandboxPolicy;
  /** Once the host `pid` is ready: notes the rlimits in force (limit-cause.ts). */
  started(pid: number): void;
  /** After the host `pid` ended: removes its ${tmp} and cgroup; the limit it was stopped by, if any, and how that is known. */
  ended(pid: number, exit: { code: number | null; signal: string | null }, stderr: readonly string[]): { limit: string; value: string; how: string } | null;
}

/**
 * The launcher's command around `hostCommand` (session/host-command.ts: `... __host [--shim=…]`),
 * or E_SANDBOX naming the first layer the declaration needs and this kernel cannot give: the
 * native launcher with the plan's words (launch-plan.ts) where there is one, else `cxagent
 * __sandbox <policy JSON>`.
 *
 * Another kind of process (a Cortex process plugin's per-call command, say) is started the same
 * way: its command, whose first word is an absolute path (execve searches no PATH), and
 * `launcher`, the cxagent command that runs `__sandbox` (hostCommand() up to its `__host`).
 */
export function sandboxedCommand(hostCommand: readonly string[], policy: SandboxPolicy, offer: KernelOffer = probeKernel(), launcher?: readonly string[]): Sandboxed {
  const plan = planSandbox(policy, offer);
  const first = plan.missing[0];
  if (first) {
    throw new CxError("E_SANDBOX", `plugin '${policy.plugin}' was not loaded: its sandbox needs the ${first.layer} layer, and ${first.why}`, {
      hint: `run it where the kernel offers ${first.layer}, or, to run it without that layer, add "${first.layer}" to "sandboxAccepts" of its entry in config.json`,
      details: { plugin: policy.plugin, layer: first.layer, missing: plan.missing },
    });
  }
  const at = hostCommand.indexOf("__host");
  const self = launcher ?? (at >= 0 ? hostCommand.slice(0, at) : null);
  if (self === null || !hostCommand[0]?.startsWith("/")) {
    throw new CxError("E_INTERNAL", `the sandbox launcher cannot start ${JSON.stringify(hostCommand[0] ?? "")}: ${self === null ? "no cxagent command to run the launcher was given" : "its path must be absolute"}`);
  }
  // The plan is worked out here, whole, and carried out by the native launcher (a few KiB, no
  // runtime to start); without one, by `cxagent __sandbox`, which works it out again.
  const native = nativeLauncher(policy.tmpBase);
  if (native !== null && plan.layers.includes("pids")) sweepPidsCgroups(plan.pidsBase!);
  const commandFor = (args: readonly string[]) => {
    const host = [...hostCommand, ...args];
    return native !== null ? [native, ...launchWords(policy, plan, host), "--", ...host] : [...self, "__sandbox", JSON.stringify(policy), ...host];
  };
  let command: string[] | undefined;
  const addressSpaces = new Map<number, number | null>();
  return {
    get command() {
      return (command ??= commandFor([]));
    },
    commandFor,
    layers: plan.layers,
    policy,
    started(pid) {
      // The rlimit really in force, read while the host runs: after its end, /proc has nothing of it.
      if (policy.memoryMiB !== undefined) addressSpaces.set(pid, addressSpaceOf(pid));
    },
    ended(pid, exit) {
      rmSync(tmpOf(policy.tmpBase, pid), { recursive: true, force: true });
      const forkRefused = plan.layers.includes("pids") && endPidsCgroup(plan.pidsBase!, pid);
      const addressSpace = addressSpaces.get(pid) ?? null;
      addressSpaces.delete(pid);
      return limitCause({ exit, policy, forkRefused, addressSpace });
    },
  };
}
