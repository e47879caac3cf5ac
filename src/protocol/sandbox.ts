/**
 * The manifest's `sandbox` key (issue 39): what an approved plugin may touch, which the plugin
 * host's launcher (src/sandbox/) has the kernel enforce before any plugin byte runs. A sidecar and
 * describe declare it alike; a Cortex plugin declares it as `[cxagent.sandbox]` in manifest.toml.
 *
 *   "sandbox": {"fs": {"read": ["${project}"], "write": ["${project}/out"]}, "net": "none",
 *               "processes": 8, "memoryMiB": 512, "openFiles": 256}
 *
 * Paths are absolute, or begin with a placeholder: ${project} (the working directory), ${plugin}
 * (the plugin's folder, read-only), ${cache} (a folder of the plugin's own under the state folder)
 * or ${tmp} (a private temporary folder per plugin host). No `..`, no other `${`. `net` is "none"
 * (the default), "any", or TCP ports: {"connect": [{"port": 443}], "bind": [{"port": 8080}]}.
 */
import * as v from "valibot";
import { describeValue } from "./issues.ts";

export const SANDBOX_PLACEHOLDERS = ["project", "plugin", "cache", "tmp"] as const;
export type SandboxPlaceholder = (typeof SANDBOX_PLACEHOLDERS)[number];

/** Why `path` is not a sandbox path, or null when it is one. */
export function sandboxPathProblem(path: string): string | null {
  const placeholder = /^\$\{([^}]*)\}(.*)$/.exec(path);
  if (placeholder) {
    if (!(SANDBOX_PLACEHOLDERS as readonly string[]).includes(placeholder[1]!)) {
      return `${JSON.stringify(path)} names \${${placeholder[1]}}, which is not a placeholder (${SANDBOX_PLACEHOLDERS.map((p) => `\${${p}}`).join(", ")})`;
    }
    if (placeholder[2] !== "" && !placeholder[2]!.startsWith("/")) return `${JSON.stringify(path)}: after the placeholder comes nothing or "/"`;
  } else if (!path.startsWith("/")) {
    return `${JSON.stringify(path)} is neither absolute nor begins with a placeholder such as \${project}`;
  }
  if (path.split("/").includes("..")) return `${JSON.stringify(path)} contains "..": name the folder itself`;
  if ((placeholder ? placeholder[2]! : path).includes("${")) return `${JSON.stringify(path)}: a placeholder may only begin a path`;
  if (path.includes("\0")) return `${JSON.stringify(path)} contains a NUL byte`;
  return null;
}

const SandboxPath = v.pipe(v.string(), v.rawCheck<string>(({ dataset, addIssue }) => {
  if (!dataset.typed) return;
  const problem = sandboxPathProblem(dataset.value);
  if (problem !== null) addIssue({ message: problem });
}));

const Port = v.strictObject({
  port: v.pipe(v.number(), v.integer(), v.minValue(1, (i) => `port ${describeValue(i.input)} is not 1..65535`), v.maxValue(65535, (i) => `port ${describeValue(i.input)} is not 1..65535`)),
});

const NetSchema = v.union([
  v.literal("none"),
  v.literal("any"),
  v.strictObject({ connect: v.optional(v.array(Port), () => []), bind: v.optional(v.array(Port), () => []) }),
], (issue) => `must be "none", "any" or {"connect": [{"port": N}], "bind": [...]}, not ${describeValue(issue.input)}`);

const count = (what: string, min: number, max: number) =>
  v.pipe(v.number(), v.integer(`${what} must be a whole number`), v.minValue(min, `${what} must be at least ${min}`), v.maxValue(max, `${what} must be at most ${max}`));

export const SandboxSchema = v.strictObject({
  fs: v.optional(v.strictObject({ read: v.optional(v.array(SandboxPath), () => []), write: v.optional(v.array(SandboxPath), () => []) }), () => ({ read: [], write: [] })),
  net: v.optional(NetSchema, "none"),
  processes: v.optional(count("processes", 1, 1 << 20)),
  memoryMiB: v.optional(count("memoryMiB", 64, 1 << 24)),
  openFiles: v.optional(count("openFiles", 16, 1 << 20)),
});
export type SandboxDeclaration = v.InferOutput<typeof SandboxSchema>;
export type SandboxNet = SandboxDeclaration["net"];

/**
 * The layers a sandboxed plugin host can be under, by the names `describe`, `load --json`,
 * `cxagent paths` and each MCP call's `_meta` report, and that config.json's `sandboxAccepts`
 * names to accept one missing for a plugin.
 */
export const SANDBOX_LAYERS = ["no_new_privs", "landlock", "landlock-net", "seccomp", "rlimits", "netns", "pids"] as const;
export type SandboxLayer = (typeof SANDBOX_LAYERS)[number];

/**
 * What the launcher (`cxagent __sandbox`) is handed: the declaration with its placeholders
 * resolved, except ${tmp}, which the launcher makes per host under `tmpBase`.
 */
export interface SandboxPolicy {
  /** The plugin's name, for messages. */
  plugin: string;
  read: string[];
  write: string[];
  net: SandboxNet;
  processes?: number;
  memoryMiB?: number;
  openFiles?: number;
  /** Where the launcher makes the host's ${tmp} (`<tmpBase>/sandbox-<pid>`), a private folder. */
  tmpBase: string;
  /** Layers the user accepts missing for this plugin (config.json `sandboxAccepts`). */
  accepts: SandboxLayer[];
}

/** The exit code of a launcher that refused to start the host (a layer could not be applied). */
export const SANDBOX_REFUSED_EXIT = 78;
/** The prefix of the launcher's one stderr line saying why it refused. */
export const SANDBOX_REFUSED_LINE = "cxagent-sandbox-refused: ";

/** What the runtime (host/) is told of a sandboxed host: the layers applied, and what a limit did once it ended. */
export interface HostSandbox {
  layers: SandboxLayer[];
  /** After the host `pid` ended: cleans up; the limit that stopped it, if one did ({limit: "memory", value: "512 MiB"}). */
  ended(pid: number, exit: { code: number | null; signal: string | null }, stderr: readonly string[]): { limit: string; value: string } | null;
}
