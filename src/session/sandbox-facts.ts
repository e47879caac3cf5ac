/**
 * What a plugin's sandbox will be, before it runs (issue 39): its own declaration, what the
 * user's config.json entry imposes or narrows it to, and the intersection that is enforced —
 * shown by describe, list and the trust prompt, and refused when config.json requires a sandbox
 * and there is none.
 */
import { CxError } from "../errors.ts";
import type { PluginConfig } from "../discovery/config.ts";
import type { SandboxDeclaration, SandboxLayer } from "../protocol/sandbox.ts";
import { policyOf } from "../sandbox/command.ts";
import { intersect } from "../sandbox/intersect.ts";
import { planSandbox, probeKernel } from "../sandbox/plan.ts";

export interface SandboxFacts {
  /** The plugin's own (sidecar `sandbox`, Cortex `[cxagent.sandbox]`). */
  declared: SandboxDeclaration | null;
  /** Its config.json entry's `sandbox`. */
  imposed: SandboxDeclaration | null;
  /** What the kernel will enforce: the intersection; null: unconfined. */
  effective: SandboxDeclaration | null;
  /** Layers the user accepts missing (config.json `sandboxAccepts`). */
  accepts: SandboxLayer[];
  /** config.json says `"sandbox": "required"`. */
  required: boolean;
}

export function sandboxFacts(declared: SandboxDeclaration | undefined, entry: PluginConfig | undefined, required: boolean): SandboxFacts {
  const imposed = entry?.sandbox ?? null;
  const own = declared ?? null;
  const effective = own && imposed ? intersect(own, imposed) : (own ?? imposed);
  return { declared: own, imposed, effective, accepts: entry?.sandboxAccepts ?? [], required };
}

/** E_SANDBOX when config.json requires a sandbox and the plugin has none; else null. */
export function sandboxRefusal(name: string, facts: SandboxFacts): CxError | null {
  if (!facts.required || facts.effective !== null) return null;
  return new CxError("E_SANDBOX", `plugin '${name}' was refused: config.json says "sandbox": "required", and the plugin declares no sandbox`, {
    hint: `add a "sandbox" key to its manifest (its sidecar; a Cortex plugin: [cxagent.sandbox] in manifest.toml), or impose one in config.json as plugins.${name}.sandbox, e.g. {"fs": {"read": ["\${project}"]}, "net": "none"}`,
    details: { plugin: name, key: "sandbox" },
  });
}

/** The sandbox in plain words, for describe, list and the trust prompt: "unconfined" when there is none. */
export function sandboxWords(s: SandboxDeclaration | null): string {
  if (s === null) return "unconfined: it may read and write anything you can, use the network and start processes";
  const list = (paths: string[]) => (paths.length ? paths.join(", ") : "nothing");
  const net = s.net === "none" ? "no network" : s.net === "any" ? "any network" : `TCP connect to port ${s.net.connect.map((p) => p.port).join(", ") || "none"}, bind to port ${s.net.bind.map((p) => p.port).join(", ") || "none"}`;
  const limits = [s.processes !== undefined ? `${s.processes} processes` : "", s.memoryMiB !== undefined ? `${s.memoryMiB} MiB of memory` : "", s.openFiles !== undefined ? `${s.openFiles} open files` : ""].filter(Boolean);
  return `reads ${list(s.fs.read)} (and its own folder); writes ${list(s.fs.write)}; ${net}${limits.length ? `; at most ${limits.join(", ")}` : ""}`;
}

/** What describe, list and `load --json` report of a plugin's sandbox; `layers` null: unconfined. */
export interface SandboxReport {
  effective: SandboxDeclaration | null;
  declared: SandboxDeclaration | null;
  imposed: SandboxDeclaration | null;
  words: string;
  /** The layers this kernel will apply, or null (unconfined). */
  layers: SandboxLayer[] | null;
  /** Layers it needs that this kernel lacks and the user has not accepted: its load is refused. */
  missing: { layer: SandboxLayer; why: string }[];
}

export function sandboxReport(facts: SandboxFacts): SandboxReport {
  const base = { effective: facts.effective, declared: facts.declared, imposed: facts.imposed, words: sandboxWords(facts.effective) };
  if (facts.effective === null) return { ...base, layers: null, missing: [] };
  // The layers do not depend on the paths: a plan with placeholders in place of this session's folders.
  const plan = planSandbox(policyOf(facts.effective, { plugin: "", project: "/", folder: "/", stateDir: "/", tmpBase: "/", accepts: facts.accepts }), probeKernel());
  return { ...base, layers: plan.layers, missing: plan.missing };
}

/** What this kernel offers a sandbox, for `cxagent paths` (as a doctor would say it). */
export function kernelSandbox(): { landlockAbi: number; seccomp: boolean; netns: boolean; pidsCgroup: string | null; words: string } {
  const k = probeKernel();
  const parts = [
    k.landlockAbi ? `Landlock ABI ${k.landlockAbi}${k.landlockAbi >= 4 ? " (files, TCP ports)" : " (files; no TCP rules)"}` : "no Landlock (a plugin that declares a sandbox is refused)",
    k.seccomp ? "seccomp" : "no seccomp",
    k.root ? "network namespaces" : "no network namespace (not root; seccomp and Landlock keep net \"none\")",
    k.pidsBase ? `pids cgroup in ${k.pidsBase}` : "no pids cgroup (\"processes\" is refused)",
  ];
  return { landlockAbi: k.landlockAbi, seccomp: k.seccomp, netns: k.root, pidsCgroup: k.pidsBase, words: parts.join(", ") };
}
