import * as v from "valibot";
import { describeValue, type Problem, toProblems } from "./issues.ts";

/** The contract numbers this build speaks (SPEC §3.2). */
export const CONTRACT_CURRENT = 4;
export const CONTRACT_OLDEST = 2;

export function contractInRange(n: number): boolean {
  return Number.isInteger(n) && n >= CONTRACT_OLDEST && n <= CONTRACT_CURRENT;
}

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

export const ToolSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(TOOL_NAME, (i) => `${describeValue(i.input)} is not a tool name (1-64 of A-Z a-z 0-9 _ -)`)),
  description: v.optional(v.string(), ""),
  inputSchema: v.optional(v.record(v.string(), v.unknown()), () => ({ type: "object" })),
  gated: v.optional(Gated, false),
  alwaysAskable: v.optional(v.boolean(), true),
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
});
export type Manifest = v.InferOutput<typeof ManifestSchema>;
/** A manifest as a plugin may write it: the defaults filled in by the schema left out. */
export type ManifestInput = v.InferInput<typeof ManifestSchema>;

export type ManifestCheck = { ok: true; manifest: Manifest } | { ok: false; problems: Problem[] };

/**
 * How deeply a manifest may nest objects and arrays. Real ones nest a dozen levels (an inputSchema
 * of objects of arrays); past this the comparison and JSON printing would run out of stack.
 */
export const MANIFEST_DEPTH_LIMIT = 64;

/** The path of the first value nested deeper than `limit`, or null. Iterative: any depth is safe. */
export function tooDeep(input: unknown, limit = MANIFEST_DEPTH_LIMIT): string | null {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: input, depth: 0, path: "" }];
  while (stack.length) {
    const { value, depth, path } = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= limit) return path || "(the document)";
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [/^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`, v] as const);
    for (const [step, child] of entries) stack.push({ value: child, depth: depth + 1, path: path ? path + step : step.replace(/^\./, "") });
  }
  return null;
}

/** Validates a parsed manifest, reporting every problem at once with its JSON path. */
export function checkManifest(input: unknown): ManifestCheck {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return { ok: false, problems: [{ path: "", message: `the manifest is ${describeValue(input)}, not a JSON object` }] };
  }
  const deep = tooDeep(input);
  if (deep !== null) {
    const shown = deep.length > 120 ? `${deep.slice(0, 120)}…` : deep;
    return { ok: false, problems: [{ path: deep, message: `${shown}: nested more than ${MANIFEST_DEPTH_LIMIT} levels deep, which no manifest needs` }] };
  }
  const result = v.safeParse(ManifestSchema, input);
  if (result.success) return { ok: true, manifest: result.output };
  return { ok: false, problems: toProblems(result.issues, "manifest").map((p) => nameTheOwner(p, input)) };
}

export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `  - ${p.message}`).join("\n");
}

/** Adds the tool's or command's own name to a problem inside it, so `tools[2]` reads as `calc_x`. */
function nameTheOwner(problem: Problem, manifest: object): Problem {
  const match = /^(tools|commands)\[(\d+)\]/.exec(problem.path);
  if (!match) return problem;
  const list = (manifest as Record<string, unknown>)[match[1]!];
  const name = Array.isArray(list) ? (list[Number(match[2])] as { name?: unknown } | undefined)?.name : undefined;
  if (typeof name !== "string") return problem;
  const kind = match[1] === "tools" ? "tool" : "command";
  return { ...problem, message: `${problem.message} (${kind} '${name}')` };
}
