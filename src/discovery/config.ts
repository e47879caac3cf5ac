/**
 * config.json (SPEC §6.2): where to look for plugins, and per plugin its file, whether it is
 * enabled, its settings, optionally the folder it is pinned to, which of its tools the model sees
 * (`tools`: allow, deny, ask; the pattern dialect is in globs.ts) and limits on its calls.
 * Validated strictly; every problem reported with its path at once. Plugin names are ordinary keys — `__proto__`,
 * `constructor` and `prototype` included — kept in a Map, never dropped.
 */
import { join } from "node:path";
import * as v from "valibot";
import { readJsonStrict } from "../files.ts";
import { isCxError, CxError } from "../errors.ts";
import { describeProblems } from "../protocol/manifest.ts";
import { toProblems } from "../protocol/issues.ts";
import { SANDBOX_LAYERS, SandboxSchema } from "../protocol/sandbox.ts";
import { ToolPatternsSchema } from "./globs.ts";
import { SecretBindingsSchema } from "./secret-bindings.ts";

/** A limit in milliseconds: a whole number a timer can hold. */
export const MillisecondsSchema = v.pipe(v.number(), v.integer("must be a whole number of milliseconds"), v.minValue(1, "must be at least 1 ms"), v.maxValue(2_147_483_647, "must be at most 2147483647 ms"));

/**
 * Which of a plugin's tools the model sees and how they ask: a tool is hidden when a `deny`
 * pattern matches it, or when there is an `allow` list and none of its patterns does (deny wins);
 * a tool an `ask` pattern matches asks on every call, as if it were `gated: true` with no Always.
 */
export const ToolChoiceSchema = v.strictObject({
  allow: v.optional(ToolPatternsSchema),
  deny: v.optional(ToolPatternsSchema),
  ask: v.optional(ToolPatternsSchema),
});
export type ToolChoice = v.InferOutput<typeof ToolChoiceSchema>;

export const PluginConfigSchema = v.strictObject({
  file: v.pipe(v.string(), v.check((f) => f.trim() !== "" && !f.includes("/") && !f.includes("\\"), "must be a file name, without a folder")),
  enabled: v.optional(v.boolean(), true),
  settings: v.optional(v.unknown()),
  /** The plugin's folder (`~`, `$VAR` expanded; relative to the project folder): a same-named plugin elsewhere is refused. */
  path: v.optional(v.pipe(v.string(), v.check((p) => p.trim() !== "", "must not be blank"))),
  tools: v.optional(ToolChoiceSchema),
  /** Every invoke of this plugin is abandoned after at most this long (a caller may give less). */
  invokeTimeoutMs: v.optional(MillisecondsSchema),
  /** How long its "dynamic" gate may take before it counts as failed (default: the session's, 500 ms). */
  gateTimeoutMs: v.optional(MillisecondsSchema),
  /**
   * A module plugin only: absolute folders outside its own from which its Workers may start (and
   * import), read from disk as they are then, not approved. Never in a project's config.
   */
  workerFolders: v.optional(v.array(v.pipe(v.string(), v.check((p) => p.startsWith("/"), "must be an absolute folder")))),
  /** A sandbox the user imposes on it, or narrows its own to (issue 39): the effective one is the intersection. */
  sandbox: v.optional(SandboxSchema),
  /** Layers of its sandbox the user accepts missing where the kernel cannot give them (else E_SANDBOX). */
  sandboxAccepts: v.optional(v.array(v.picklist(SANDBOX_LAYERS, (i) => `${JSON.stringify(i.input)} is not a sandbox layer (${SANDBOX_LAYERS.join(", ")})`))),
  /** What its declared secrets are bound to (issue 40; secret-bindings.ts). Never in a project's config. */
  secrets: v.optional(SecretBindingsSchema),
  /** The most bytes of one answer the parent reads (issue 41; default and most 64 MiB): past it, E_LIMIT. */
  readCapBytes: v.optional(v.pipe(v.number(), v.integer("must be a whole number of bytes"), v.minValue(4096, "must be at least 4096 bytes"), v.maxValue(64 << 20, "must be at most 67108864 bytes (64 MiB)"))),
  /** The most bytes of output.content a caller gets before the rest is spilled to the result store (issue 41). */
  maxOutputBytes: v.optional(v.pipe(v.number(), v.integer("must be a whole number of bytes"), v.minValue(1024, "must be at least 1024 bytes"))),
  /** `cxagent mcp`: stop its plugin host after this long without a call (default: the server's, 10 minutes); anywhere: stop a host serving a sandbox lease after this long idle (default 30 s). */
  idleMs: v.optional(MillisecondsSchema),
  /** `cxagent mcp`: once started, keep its plugin host until the server stops. */
  keepAlive: v.optional(v.boolean()),
});
export type PluginConfig = v.InferOutput<typeof PluginConfigSchema>;

export const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

// `plugins` is checked entry by entry below: v.record would drop keys such as __proto__.
const ConfigShapeSchema = v.strictObject({
  pluginPaths: v.optional(v.array(v.string()), () => []),
  plugins: v.optional(v.custom<Record<string, unknown>>(isPlainObject, "must be an object of plugin entries"), () => ({})),
  /** "required": a plugin with no sandbox (its own or its entry's) is refused. */
  sandbox: v.optional(v.literal("required", 'must be "required" (a plugin with no sandbox is then refused) or left out')),
});

export interface Config {
  pluginPaths: string[];
  plugins: ReadonlyMap<string, PluginConfig>;
  /** `"sandbox": "required"`: every plugin must run under a sandbox, its own or its entry's. */
  sandboxRequired?: boolean;
}

export const EMPTY_CONFIG: Config = { pluginPaths: [], plugins: new Map() };

export function configPath(configDir: string): string {
  return join(configDir, "config.json");
}

/** Reads config.json; a missing file is an empty config. */
export function readConfig(configDir: string): Config {
  const path = configPath(configDir);
  let raw: unknown;
  try {
    raw = readJsonStrict(path, v.unknown(), undefined, "config file");
  } catch (error) {
    // The user's own file: its problems are invalid input (exit 3), not corrupt state.
    if (isCxError(error, "E_STATE")) throw invalid(path, error.message.replace("is corrupt: ", "is invalid: "), error.details);
    throw error;
  }
  return raw === undefined ? EMPTY_CONFIG : parseConfig(raw, path);
}

export function parseConfig(raw: unknown, path: string): Config {
  const shape = v.safeParse(ConfigShapeSchema, raw);
  const issues: v.BaseIssue<unknown>[] = shape.success ? [] : [...shape.issues];
  const plugins = new Map<string, PluginConfig>();
  const entries = isPlainObject(raw) && isPlainObject(raw.plugins) ? raw.plugins : {};
  for (const name of Object.keys(entries)) {
    const entry = v.safeParse(PluginConfigSchema, entries[name]);
    if (entry.success) plugins.set(name, entry.output);
    else {
      const prefix = [{ key: "plugins" }, { key: name }] as unknown as NonNullable<v.BaseIssue<unknown>["path"]>;
      for (const issue of entry.issues) issues.push({ ...issue, path: [...prefix, ...(issue.path ?? [])] as typeof prefix });
    }
  }
  if (issues.length || !shape.success) {
    const problems = toProblems(issues, "config file");
    throw invalid(path, `the config file ${path} is invalid: it does not have the expected shape:\n${describeProblems(problems)}`, { path });
  }
  return { pluginPaths: shape.output.pluginPaths, plugins, ...(shape.output.sandbox === "required" ? { sandboxRequired: true } : {}) };
}

function invalid(path: string, message: string, details: Record<string, unknown> | undefined): CxError {
  return new CxError("E_CONFIG", message, { hint: `fix ${path}: it holds "pluginPaths" (folders to search), "plugins" (per plugin: file, path, enabled, settings, tools, invokeTimeoutMs, gateTimeoutMs, workerFolders, secrets, readCapBytes, maxOutputBytes, idleMs, keepAlive, sandbox, sandboxAccepts) and "sandbox": "required"`, details });
}
