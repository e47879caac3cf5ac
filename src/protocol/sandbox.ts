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

export { SANDBOX_LAYERS, SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE } from "./sandbox-policy.ts";
export type { HostSandbox, SandboxLayer, SandboxPolicy } from "./sandbox-policy.ts";
