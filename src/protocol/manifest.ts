import * as v from "valibot";
import { describeValue, type Problem, toProblems } from "./issues.ts";
import { SandboxSchema } from "./sandbox.ts";

import { CONTRACT_CURRENT, CONTRACT_OLDEST, contractInRange, MANIFEST_DEPTH_LIMIT, tooDeep, tooDeepText } from "./contract.ts";

export { CONTRACT_CURRENT, CONTRACT_OLDEST, contractInRange, MANIFEST_DEPTH_LIMIT, tooDeep };

const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** The rule for a plugin name, in words, for messages. */
export const PLUGIN_NAME_RULE = "1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit";

export function isPluginName(name: string): boolean {
  return PLUGIN_NAME.test(name);
}
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const COMMAND_NAME = /^[^\s/][^\s]{0,63}$/;

const Gated = v.union([v.boolean(), v.literal("dynamic")], (issue) =>
  `must be true, false or "dynamic", not ${describeValue(issue.input)}`);

/** MCP's tool annotations (issue 42): hints a client may show; cxagent enforces none of them. */
export const ToolAnnotationsSchema = v.strictObject({
  readOnlyHint: v.optional(v.boolean()),
  destructiveHint: v.optional(v.boolean()),
  idempotentHint: v.optional(v.boolean()),
  openWorldHint: v.optional(v.boolean()),
});

export const ToolSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(TOOL_NAME, (i) => `${describeValue(i.input)} is not a tool name (1-64 of A-Z a-z 0-9 _ -)`)),
  description: v.optional(v.string(), ""),
  inputSchema: v.optional(v.record(v.string(), v.unknown()), () => ({ type: "object" })),
  gated: v.optional(Gated, false),
  alwaysAskable: v.optional(v.boolean(), true),
  // Issue 42: what MCP clients show. The plugin's claims, never permissions; outputSchema is checked.
  title: v.optional(v.string()),
  annotations: v.optional(ToolAnnotationsSchema),
  outputSchema: v.optional(v.record(v.string(), v.unknown())),
});
export type Tool = v.InferOutput<typeof ToolSchema>;

export const CommandArgumentSchema = v.strictObject({
  name: v.string(),
  summary: v.optional(v.string()),
});

export const CommandSchema = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(COMMAND_NAME, (i) => `${describeValue(i.input)} is not a command name (no leading '/', no spaces)`),
  ),
  summary: v.optional(v.string()),
  arguments: v.optional(v.array(CommandArgumentSchema)),
});
export type Command = v.InferOutput<typeof CommandSchema>;

/** A secret's name (issue 40): what a binding in config.json is keyed by, and what a plugin asks for. */
export const SECRET_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const SecretSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(SECRET_NAME, (i) => `${describeValue(i.input)} is not a secret name (1-64 of a-z 0-9 _ . -, starting with a letter or digit)`)),
  description: v.optional(v.string(), ""),
});
export type SecretDeclaration = v.InferOutput<typeof SecretSchema>;

function uniqueNames<T extends { name: string }>(kind: string) {
  return v.rawCheck<T[]>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    dataset.value.forEach((item, index) => {
      if (seen.has(item.name)) {
        addIssue({
          message: `${kind} '${item.name}' is declared more than once`,
          path: [{ type: "array", origin: "value", input: dataset.value, key: index, value: item }],
        });
      }
      seen.add(item.name);
    });
  });
}

export const ManifestSchema = v.strictObject({
  pluginContract: v.pipe(
    v.number(),
    v.integer(),
    v.check(contractInRange, (i) =>
      `contract ${String(i.input)} is outside the range this host accepts (${CONTRACT_OLDEST}..${CONTRACT_CURRENT})`),
  ),
  name: v.pipe(v.string(), v.regex(PLUGIN_NAME, (i) => `${describeValue(i.input)} is not a plugin name (${PLUGIN_NAME_RULE})`)),
  version: v.pipe(v.string(), v.check((s) => s.trim() !== "", "must not be blank")),
  instructions: v.optional(v.nullable(v.string()), null),
  spawns: v.optional(v.boolean(), false),
  client: v.optional(v.boolean(), false),
  tools: v.pipe(v.array(ToolSchema), uniqueNames<Tool>("tool")),
  commands: v.optional(v.pipe(v.array(CommandSchema), uniqueNames<Command>("command")), () => []),
  /** The secrets it may ask for (issue 40); what a user binds to them is in config.json, never here. */
  secrets: v.optional(v.pipe(v.array(SecretSchema), uniqueNames<SecretDeclaration>("secret"))),
  /** What the plugin may touch, enforced by the kernel (protocol/sandbox.ts); none: unconfined. */
  sandbox: v.optional(SandboxSchema),
});
export type Manifest = v.InferOutput<typeof ManifestSchema>;
/** A manifest as a plugin may write it: the defaults filled in by the schema left out. */
export type ManifestInput = v.InferInput<typeof ManifestSchema>;

export type ManifestCheck = { ok: true; manifest: Manifest } | { ok: false; problems: Problem[] };

/** Validates a parsed manifest, reporting every problem at once with its JSON path. */
export function checkManifest(input: unknown): ManifestCheck {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return { ok: false, problems: [{ path: "", message: `the manifest is ${describeValue(input)}, not a JSON object` }] };
  }
  const deep = tooDeep(input);
  if (deep !== null) return { ok: false, problems: [{ path: deep, message: tooDeepText(deep) }] };
  const result = v.safeParse(ManifestSchema, input);
  if (result.success) return { ok: true, manifest: result.output };
  return { ok: false, problems: toProblems(result.issues, "manifest").map((p) => nameTheOwner(p, input)) };
}

/**
 * A manifest already checked, with the JSON it was checked from (JSON.stringify of what JSON.parse
 * made of its file): a plugin host that describes exactly that JSON describes exactly that
 * manifest, and is not checked again. Checking and comparing it again, cold, took 0.5-0.8 ms of a
 * one-shot invoke (timestamps in the process); the whole invoke was about 10 % faster without.
 */
export interface KnownManifest {
  json: string;
  manifest: Manifest;
}

/**
 * The manifest a plugin host described on its startup line, checked in the parent. A native host
 * sends what cxagent_plugin_describe returned, parsed but not validated (it loads no validator, so
 * it starts sooner and smaller); here it meets the schema, and for a native plugin its
 * pluginContract must equal the handshake and `client: true` needs the poll export. The other
 * kinds' hosts checked their manifests already; the schema check here costs them nothing new.
 */
export function checkDescribed(
  ready: { contract: number; manifest: unknown; exports: readonly string[] },
  described: { by: string; checkedByHost: boolean },
  expected?: KnownManifest,
): { ok: true; manifest: Manifest } | { ok: false; error: string } {
  // The very JSON of a manifest checked before (its sidecar's) gives the same manifest again.
  const known = expected !== undefined && JSON.stringify(ready.manifest) === expected.json;
  const checked: ManifestCheck = known ? { ok: true, manifest: expected.manifest } : checkManifest(ready.manifest);
  const from = described.by;
  if (!checked.ok) {
    const n = checked.problems.length;
    return { ok: false, error: `${from} has ${n} problem${n === 1 ? "" : "s"}:\n${describeProblems(checked.problems)}` };
  }
  const manifest = checked.manifest;
  if (described.checkedByHost) return { ok: true, manifest };
  if (manifest.pluginContract !== ready.contract) {
    return { ok: false, error: `the manifest says pluginContract ${manifest.pluginContract} but cxagent_plugin_abi_version returned ${ready.contract}; the two must be equal` };
  }
  if (manifest.client && !ready.exports.includes("poll")) {
    return { ok: false, error: "the manifest declares client: true but the library does not export cxagent_plugin_poll, which a client needs" };
  }
  return { ok: true, manifest };
}

export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `  - ${p.message}`).join("\n");
}

/** Adds the tool's or command's own name to a problem inside it, so `tools[2]` reads as `calc_x`. */
function nameTheOwner(problem: Problem, manifest: object): Problem {
  const match = /^(tools|commands|secrets)\[(\d+)\]/.exec(problem.path);
  if (!match) return problem;
  const list = (manifest as Record<string, unknown>)[match[1]!];
  const name = Array.isArray(list) ? (list[Number(match[2])] as { name?: unknown } | undefined)?.name : undefined;
  if (typeof name !== "string") return problem;
  const kind = match[1] === "tools" ? "tool" : match[1] === "secrets" ? "secret" : "command";
  return { ...problem, message: `${problem.message} (${kind} '${name}')` };
}
