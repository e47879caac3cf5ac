/**
 * Which layers a sandbox needs, what this kernel offers (probed, never assumed), and the plan the
 * launcher carries out: the same function in the parent (which refuses with E_SANDBOX before any
 * host starts, and reports the layers) and in the launcher (which applies exactly the plan, and
 * refuses to start the host when any step of it fails).
 */
import type { SandboxLayer, SandboxPolicy } from "../protocol/sandbox-policy.ts";
import { pidsBase } from "./cgroup.ts";
import { landlockAbi, libc, seccompAvailable, syscalls } from "./kernel.ts";

export interface KernelOffer {
  landlockAbi: number;
  seccomp: boolean;
  root: boolean;
  /** Where a pids cgroup can be made, or null. */
  pidsBase: string | null;
}

let offer: KernelOffer | undefined;

/** What this kernel offers, probed once per process. */
export function probeKernel(): KernelOffer {
  if (offer) return offer;
  if (process.platform !== "linux") return (offer = { landlockAbi: 0, seccomp: false, root: false, pidsBase: null });
  offer = { landlockAbi: landlockAbi(), seccomp: syscalls() !== null && seccompAvailable(), root: libc().geteuid() === 0, pidsBase: pidsBase() };
  return offer;
}

export interface SandboxPlan {
  /** The layers that will be applied, in the order the launcher applies them. */
  layers: SandboxLayer[];
  /** Layers the declaration needs that this kernel cannot give, each with why. */
  missing: { layer: SandboxLayer; why: string }[];
  landlockAbi: number;
  pidsBase: string | null;
}

/** The plan for `policy` on a kernel offering `k`. */
export function planSandbox(policy: SandboxPolicy, k: KernelOffer): SandboxPlan {
  const layers: SandboxLayer[] = ["no_new_privs"];
  const missing: SandboxPlan["missing"] = [];
  const ports = typeof policy.net === "object";
  if (policy.net === "none" && k.root) layers.push("netns");
  if (k.landlockAbi >= 1) layers.push("landlock");
  else missing.push({ layer: "landlock", why: "this kernel has no Landlock (Linux 5.13 or later, with landlock in its LSMs), which confines the plugin's files" });
  if (policy.net !== "any" && k.landlockAbi >= 4) layers.push("landlock-net");
  else if (ports) missing.push({ layer: "landlock-net", why: `TCP rules by port need Landlock ABI 4 (Linux 6.7); this kernel offers ${k.landlockAbi === 0 ? "none" : `ABI ${k.landlockAbi}`}` });
  if (k.seccomp) layers.push("seccomp");
  else missing.push({ layer: "seccomp", why: process.platform === "linux" ? "this kernel or architecture has no seccomp filter the sandbox can install" : `${process.platform} has no seccomp` });
  layers.push("rlimits");
  if (policy.processes !== undefined) {
    if (k.pidsBase !== null) layers.push("pids");
    else missing.push({ layer: "pids", why: `"processes": ${policy.processes} needs a pids cgroup, and none can be made here (no writable v1 pids hierarchy, no cgroup v2 delegating pids)` });
  }
  const accepted = new Set(policy.accepts);
  return { layers, missing: missing.filter((m) => !accepted.has(m.layer)), landlockAbi: k.landlockAbi, pidsBase: k.pidsBase };
}
