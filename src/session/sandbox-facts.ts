/**
 * What a plugin's sandbox will be, before it runs (issue 39): its own declaration, what the
 * user's config.json entry imposes or narrows it to, and the intersection that is enforced —
 * shown by describe, list and the trust prompt, and refused when config.json requires a sandbox
 * and there is none.
 */
import { CxError } from "../errors.ts";
import type { PluginConfig } from "../discovery/config.ts";
import type { ProjectConfig } from "../discovery/project-config.ts";
import type { SandboxDeclaration, SandboxLayer } from "../protocol/sandbox.ts";
import { policyOf } from "../sandbox/command.ts";
import { intersect } from "../sandbox/intersect.ts";
import { planSandbox, probeKernel } from "../sandbox/plan.ts";
import { type Widening, wideningsOf } from "../sandbox/widening.ts";
export type { Widening } from "../sandbox/widening.ts";

export interface SandboxFacts {
  /** The plugin's own (sidecar `sandbox`, Cortex `[cxagent.sandbox]`). */
  declared: SandboxDeclaration | null;
  /** Its config.json entry's `sandbox`. */
  imposed: SandboxDeclaration | null;
  /** The project's `.cxagent/config.json` entry's `sandbox` (it may only narrow), and that file. */
  project: { sandbox: SandboxDeclaration; file: string } | null;
  /** What the kernel will enforce: the intersection of all three; null: unconfined. */
  effective: SandboxDeclaration | null;
  /** Which keys of the effective sandbox each side narrowed, in the order they apply: the user's config.json, then the project's. */
  narrowedBy: Narrowing[];
  /** What the project's entry would widen, each by its path in the sandbox: its load is refused (E_CONFIG). */
  widenings: Widening[];
  /** Layers the user accepts missing (config.json `sandboxAccepts`). */
  accepts: SandboxLayer[];
  /** config.json says `"sandbox": "required"`. */
  required: boolean;
}

/** A key of the effective sandbox (`fs.read`, `net`, `memoryMiB`...) that `by` made narrower. */
export interface Narrowing {
  key: string;
  by: "config" | "project";
  /** The file whose `plugins.<name>.sandbox` did it. */
  file: string;
}

const KEYS: [string, (s: SandboxDeclaration) => unknown][] = [
  ["fs.read", (s) => s.fs.read],
  ["fs.write", (s) => s.fs.write],
  ["net", (s) => s.net],
  ["processes", (s) => s.processes],
  ["memoryMiB", (s) => s.memoryMiB],
  ["openFiles", (s) => s.openFiles],
];

/** One step of narrowing: the intersection, and the keys it changed (all of them when there was no sandbox before). */
function narrow(before: SandboxDeclaration | null, by: SandboxDeclaration, who: Narrowing["by"], file: string): { after: SandboxDeclaration; keys: Narrowing[] } {
  const after = before ? intersect(before, by) : by;
  const keys = KEYS.filter(([, of]) => before === null ? of(after) !== undefined : JSON.stringify(of(before)) !== JSON.stringify(of(after)));
  return { after, keys: keys.map(([key]) => ({ key, by: who, file })) };
}

export interface SandboxSources {
  /** The user's config.json entry, and that file. */
  entry: PluginConfig | undefined;
  configFile: string;
  /** The project's `.cxagent/config.json` entry's sandbox, and that file. */
  project?: { sandbox: SandboxDeclaration; file: string } | null;
}

/** The project's entry's sandbox for plugin `name`, with the file it is in, or null. */
export function projectSandbox(project: ProjectConfig | null, name: string): SandboxSources["project"] {
  const sandbox = project?.plugins.get(name)?.sandbox;
  return project && sandbox ? { sandbox, file: project.path } : null;
}

export function sandboxFacts(declared: SandboxDeclaration | undefined, sources: SandboxSources, required: boolean): SandboxFacts {
  const imposed = sources.entry?.sandbox ?? null;
  const own = declared ?? null;
  const narrowedBy: Narrowing[] = [];
  let effective = own;
  if (imposed) {
    const step = narrow(effective, imposed, "config", sources.configFile);
    effective = step.after;
    // Imposed on a plugin that declares none: every key is the config's; narrowing a declared one, those it changed.
    narrowedBy.push(...step.keys);
  }
  const project = sources.project ?? null;
  const widenings = project ? wideningsOf(project.sandbox, effective) : [];
  if (project && widenings.length === 0) {
    const step = narrow(effective, project.sandbox, "project", project.file);
    effective = step.after;
    narrowedBy.push(...step.keys);
  }
  return { declared: own, imposed, project, effective, narrowedBy, widenings, accepts: sources.entry?.sandboxAccepts ?? [], required };
}

/**
 * E_CONFIG when the project's entry would widen the sandbox it may only narrow (each widening
 * named by its JSON path in that file); E_SANDBOX when config.json requires a sandbox and the
 * plugin has none; else null.
 */
export function sandboxRefusal(name: string, facts: SandboxFacts): CxError | null {
  if (facts.project && facts.widenings.length) {
    const problems = facts.widenings.map((w) => ({ path: `plugins.${name}.sandbox.${w.at}`, message: `plugins.${name}.sandbox.${w.at}: ${w.message}` }));
    return new CxError("E_CONFIG", `plugin '${name}' was refused: the project's config file ${facts.project.file} would widen its sandbox, and a project can only narrow it:\n${problems.map((p) => `  - ${p.message}`).join("\n")}`, {
      hint: `remove or narrow those entries in ${facts.project.file}: each must lie within what the plugin declares and your own config.json allows (describe shows it)`,
      details: { plugin: name, path: facts.project.file, problems },
    });
  }
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
  /** The project's entry's sandbox, or null. */
  project: SandboxDeclaration | null;
  /** Which keys the user's config.json and the project's config narrowed, and the file of each. */
  narrowedBy: Narrowing[];
  words: string;
  /** The layers this kernel will apply, or null (unconfined). */
  layers: SandboxLayer[] | null;
  /** Layers it needs that this kernel lacks and the user has not accepted: its load is refused. */
  missing: { layer: SandboxLayer; why: string }[];
}

export function sandboxReport(facts: SandboxFacts): SandboxReport {
  const base = { effective: facts.effective, declared: facts.declared, imposed: facts.imposed, project: facts.project?.sandbox ?? null, narrowedBy: facts.narrowedBy, words: sandboxWords(facts.effective) };
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
