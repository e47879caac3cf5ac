/**
 * Cortex process plugins: a `manifest.toml` whose `[native]` section lists `[[native.tools]]`,
 * each a command Cortex runs once per call (isolation "process", its default). Read strictly here,
 * for the parent (discovery, inspection: the manifest it declares before it runs) and for the
 * plugin host (which runs the commands), from the same bytes:
 *
 *   name, version, description                      the plugin's (its name is its identity)
 *   [native] isolation = "process"                  the default when no library is named
 *   [native] allow_host_paths = true                commands and working folders may be outside
 *                                                   the plugin's folder (the trust prompt names them)
 *   [[native.tools]] name, description, input_schema
 *     command, args[], working_dir                  relative to the plugin's folder
 *     inherit_env[] (default ["PATH"]), env{}       the command's whole environment
 *     timeout_secs, max_output_bytes (1 MiB),       per call: ended (its whole process group)
 *     max_memory_bytes, max_cpu_secs                past them; RLIMIT_AS and RLIMIT_CPU
 *     effects[{kind, confirmation, ...}]            gating, as a Cortex native tool's
 *
 * cxagent's kernel sandbox, `[cxagent.sandbox]` (protocol/sandbox.ts), confines each call's
 * process (plugin-host/process-sandbox.ts): the plugin's folder readable and its commands
 * executable, outside working folders readable and outside commands executable where
 * allow_host_paths lets a tool name them. Every other key is Cortex's own and ignored
 * (cortex_version, trust, [capabilities], [sandbox]).
 */
import { isAbsolute, normalize, posix } from "node:path";
import { parse, TomlError } from "smol-toml";
import * as v from "valibot";
import { describeValue, type Problem, toProblems } from "./issues.ts";
import { CONTRACT_CURRENT, isPluginName, PLUGIN_NAME_RULE } from "./manifest.ts";
import { type SandboxDeclaration, SandboxSchema } from "./sandbox.ts";

export const PROCESS_MANIFEST = "manifest.toml";
/** Cortex's default cap on a call's stdout and stderr together. */
export const DEFAULT_MAX_OUTPUT = 1 << 20;
/** The longest timeout a timer can wait (2^31 - 1 ms), in whole seconds. */
const MAX_SECS = Math.floor(0x7fffffff / 1000);

const Text = v.pipe(v.string(), v.check((s) => s.trim() !== "", "must not be blank"));
const Positive = (unit: string) => v.pipe(v.number(), v.integer(`must be a whole number of ${unit}`), v.minValue(1, `must be at least 1 ${unit.replace(/s$/, "")}`));
const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

const EffectSchema = v.object({
  kind: v.string(),
  confirmation: v.optional(v.picklist(["never", "on_risk", "always"], (i) => `must be "never", "on_risk" or "always", not ${JSON.stringify(i.input)}`), "never"),
});

const ToolSchema = v.object({
  name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, (i) => `${describeValue(i.input)} is not a tool name (1-64 of A-Z a-z 0-9 _ -)`)),
  description: Text,
  input_schema: v.optional(v.custom<Record<string, unknown>>(isPlainObject, "must be a JSON Schema table"), () => ({ type: "object" })),
  command: Text,
  args: v.optional(v.array(v.string()), () => []),
  working_dir: v.optional(Text),
  inherit_env: v.optional(v.array(v.pipe(v.string(), v.regex(/^[^=\0]+$/, "must be a variable's name"))), () => ["PATH"]),
  env: v.optional(v.record(v.pipe(v.string(), v.regex(/^[^=\0]+$/, "must be a variable's name")), v.string()), () => ({})),
  timeout_secs: v.optional(v.pipe(Positive("seconds"), v.maxValue(MAX_SECS, `must be at most ${MAX_SECS} seconds`))),
  max_output_bytes: v.optional(Positive("bytes"), DEFAULT_MAX_OUTPUT),
  max_memory_bytes: v.optional(Positive("bytes")),
  max_cpu_secs: v.optional(Positive("seconds")),
  effects: v.optional(v.array(EffectSchema), () => []),
});

const ManifestSchema = v.object({
  name: v.pipe(v.string(), v.check(isPluginName, (i) => `${describeValue(i.input)} is not a plugin name cxagent can use (${PLUGIN_NAME_RULE})`)),
  version: Text,
  description: v.optional(v.string()),
  native: v.object({
    isolation: v.optional(v.literal("process", (i) => `must be "process" for a plugin of [[native.tools]], not ${describeValue(i.input)}`)),
    allow_host_paths: v.optional(v.boolean(), false),
    tools: v.pipe(v.array(ToolSchema), v.minLength(1, "must list at least one tool")),
  }),
  cxagent: v.optional(v.object({ sandbox: v.optional(SandboxSchema) })),
});

/** One tool of a process plugin, with its paths as written (relative to the plugin's folder, unless outside). */
export type ProcessTool = v.InferOutput<typeof ToolSchema>;

export interface ProcessPlugin {
  name: string;
  version: string;
  description: string | null;
  allowHostPaths: boolean;
  tools: ProcessTool[];
  /** `[cxagent.sandbox]`: what each call's process may touch; none: unconfined. */
  sandbox?: SandboxDeclaration;
  /** The cxagent manifest it declares (checked by the caller, like any other). */
  manifest: Record<string, unknown>;
}

export type ProcessRead = { ok: true; plugin: ProcessPlugin } | { ok: false; problems: Problem[] };

/** Whether a manifest.toml's text declares a process plugin (its [native] lists tools); false when it cannot be read. */
export function declaresProcessTools(bytes: Uint8Array): boolean {
  try {
    const doc = parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    const native = (doc as Record<string, unknown>).native;
    return isPlainObject(native) && Array.isArray(native.tools);
  } catch {
    return false;
  }
}

/** Reads a process plugin's manifest.toml, every problem named by its path. */
export function readProcessManifest(bytes: Uint8Array): ProcessRead {
  const fail = (message: string, path = ""): ProcessRead => ({ ok: false, problems: [{ path, message }] });
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return fail("it is not UTF-8 text");
  }
  let document: unknown;
  try {
    document = parse(text, { integersAsBigInt: "asNeeded" });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    return fail(`it is not valid TOML (line ${error.line}, column ${error.column}: ${error.message.replace(/^Invalid TOML document: /, "").split("\n")[0]})`);
  }
  const checked = v.safeParse(ManifestSchema, document);
  if (!checked.success) {
    return { ok: false, problems: toProblems(checked.issues, "manifest.toml").map((p, i) => (checked.issues[i]?.input === undefined && p.path ? { ...p, message: `${p.path} is required` } : p)) };
  }
  const { name, version, description, native, cxagent } = checked.output;
  const sandbox = cxagent?.sandbox;
  const problems: Problem[] = [];
  native.tools.forEach((tool, i) => {
    for (const [key, path] of [["command", tool.command], ["working_dir", tool.working_dir]] as const) {
      if (path !== undefined && !native.allow_host_paths && isOutside(path)) {
        problems.push({ path: `native.tools[${i}].${key}`, message: `native.tools[${i}].${key}: ${JSON.stringify(path)} is outside the plugin's folder; set [native] allow_host_paths = true to allow it (the trust prompt then names it)` });
      }
    }
  });
  if (problems.length) return { ok: false, problems };
  const manifest = {
    pluginContract: CONTRACT_CURRENT,
    name,
    version,
    instructions: null,
    spawns: true,
    client: false,
    tools: native.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema, ...gatingOf(t) })),
    commands: [],
    ...(sandbox ? { sandbox } : {}),
  };
  return { ok: true, plugin: { name, version, description: description ?? null, allowHostPaths: native.allow_host_paths, tools: native.tools, ...(sandbox ? { sandbox } : {}), manifest } };
}

/** Whether a path a tool names leaves the plugin's folder (absolute, or up through ".."). */
export function isOutside(path: string): boolean {
  if (isAbsolute(path)) return true;
  const n = posix.normalize(normalize(path).split("\\").join("/"));
  return n === ".." || n.startsWith("../");
}

/** As a Cortex native tool's effects gate it: "on_risk" or "always" ask on every call; "always" never offers Always. */
export function gatingOf(tool: Pick<ProcessTool, "effects">): { gated: boolean; alwaysAskable: boolean } {
  const confirmations = tool.effects.map((e) => e.confirmation);
  const always = confirmations.includes("always");
  return { gated: always || confirmations.includes("on_risk"), alwaysAskable: !always };
}

/** The commands and working folders a plugin runs from outside its folder (what the trust prompt names). */
export function outsidePaths(plugin: ProcessPlugin): { tool: string; path: string }[] {
  return plugin.tools.flatMap((t) => [t.command, t.working_dir].filter((p): p is string => p !== undefined && isOutside(p)).map((path) => ({ tool: t.name, path })));
}
