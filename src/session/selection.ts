/**
 * Which tools of a plugin the model sees, and which ask on every call (SPEC §6.2): the one place
 * that turns the rules into a ToolPolicy, which the Plugin handle then enforces on every list and
 * every call. The rules come in layers, each of which can only take away:
 *
 *   1. the user's config.json, `plugins.<name>.tools` {allow, deny, ask};
 *   2. the project's .cxagent/config.json, `plugins.<name>.tools` {deny, ask};
 *   3. the session's option `Session.open({ tools })`, for every plugin it loads;
 *   4. the load's option `load(ref, { tools })`, for that plugin.
 *
 * A tool is visible when no layer's `deny` matches it and every layer with an `allow` list has a
 * pattern that does (deny wins; an allow list in a later layer narrows, it never restores what an
 * earlier one hid). A visible tool asks on every call when any layer's `ask` matches it. Each
 * decision names the first layer, in that order, that made it.
 */
import * as v from "valibot";
import { CxError } from "../errors.ts";
import { type PluginConfig, type ToolChoice, ToolChoiceSchema } from "../discovery/config.ts";
import { matchesTool } from "../discovery/globs.ts";
import type { ProjectConfig } from "../discovery/project-config.ts";
import type { Limit, RuleSource, ToolPolicy } from "../host/tool-policy.ts";
import { formatPath, toProblems } from "../protocol/issues.ts";
import { describeProblems, type Tool } from "../protocol/manifest.ts";

export const SESSION_OPTION = "Session.open({ tools })";
export const LOAD_OPTION = "load(ref, { tools })";

/** One layer of rules: where it is written and what it says. */
export interface ToolLayer {
  source: string;
  /** The JSON path of its `tools` object in that document. */
  at: (string | number)[];
  choice: ToolChoice;
  /** Whether a pattern matching none of the plugin's tools is warned about (not for session-wide options). */
  perPlugin: boolean;
}

/** The rules a plugin is loaded under, and what they decide for its tools. */
export interface Selection {
  layers: ToolLayer[];
  limits: { invoke: Limit | null; gate: Limit | null };
  policy: ToolPolicy;
}

/** What the user's and the project's config files say about the plugin `name`. */
export interface ConfigRules {
  name: string;
  userFile: string;
  user: PluginConfig | undefined;
  project: ProjectConfig | null;
}

const path = (at: (string | number)[]) => formatPath(at.map((key) => ({ key })));

/** The selection the config files make for a plugin with these tools. */
export function configSelection(tools: readonly Tool[], rules: ConfigRules): Selection {
  const { name, userFile, user, project } = rules;
  const mine = project?.plugins.get(name);
  const layers: ToolLayer[] = [];
  if (user?.tools) layers.push({ source: userFile, at: ["plugins", name, "tools"], choice: user.tools, perPlugin: true });
  if (project && mine?.tools) layers.push({ source: project.path, at: ["plugins", name, "tools"], choice: mine.tools, perPlugin: true });
  const limit = (key: "invokeTimeoutMs" | "gateTimeoutMs"): Limit | null => {
    const candidates: Limit[] = [];
    if (user?.[key] !== undefined) candidates.push({ ms: user[key], by: { source: userFile, rule: path(["plugins", name, key]), pattern: null, kind: "limit" } });
    if (project && mine?.[key] !== undefined) candidates.push({ ms: mine[key], by: { source: project.path, rule: path(["plugins", name, key]), pattern: null, kind: "limit" } });
    return candidates.reduce<Limit | null>((low, c) => (low === null || c.ms < low.ms ? c : low), null);
  };
  const limits = { invoke: limit("invokeTimeoutMs"), gate: limit("gateTimeoutMs") };
  return { layers, limits, policy: decidePolicy(tools, layers, limits) };
}

/** The same selection narrowed further by the API's options (the session's, then the load's). */
export function narrowSelection(tools: readonly Tool[], selection: Selection, options: { session?: ToolChoice; load?: ToolChoice }): Selection {
  const layers = [...selection.layers];
  if (options.session) layers.push({ source: SESSION_OPTION, at: ["tools"], choice: options.session, perPlugin: false });
  if (options.load) layers.push({ source: LOAD_OPTION, at: ["tools"], choice: options.load, perPlugin: true });
  return { layers, limits: selection.limits, policy: decidePolicy(tools, layers, selection.limits) };
}

/** Checks a `tools` option of the API (patterns in the dialect of discovery/globs.ts). */
export function checkToolChoice(value: unknown, source: typeof SESSION_OPTION | typeof LOAD_OPTION): ToolChoice | undefined {
  if (value === undefined) return undefined;
  const parsed = v.safeParse(ToolChoiceSchema, value);
  if (parsed.success) return parsed.output;
  const issues = parsed.issues.map((issue) => ({ ...issue, path: [{ key: "tools" }, ...(issue.path ?? [])] as unknown as typeof issue.path }));
  throw new CxError("E_INVALID_INPUT", `the option ${source} is invalid:\n${describeProblems(toProblems(issues, "tools"))}`, {
    hint: "give tools as {allow?: [pattern], deny?: [pattern], ask?: [pattern]}; a pattern is a tool name with * and ? as wildcards",
  });
}

function decidePolicy(tools: readonly Tool[], layers: readonly ToolLayer[], limits: Selection["limits"]): ToolPolicy {
  const hidden = new Map<string, RuleSource>();
  const asked = new Map<string, RuleSource>();
  for (const tool of tools) {
    const why = hiddenBy(tool.name, layers);
    if (why) {
      hidden.set(tool.name, why);
      continue;
    }
    const ask = firstMatch(tool.name, layers, "ask");
    if (ask) asked.set(tool.name, ask);
  }
  const unmatched: RuleSource[] = [];
  for (const layer of layers) {
    if (!layer.perPlugin) continue;
    for (const kind of ["allow", "deny", "ask"] as const) {
      (layer.choice[kind] ?? []).forEach((pattern, i) => {
        if (!tools.some((t) => matchesTool(pattern, t.name))) unmatched.push({ source: layer.source, rule: path([...layer.at, kind, i]), pattern, kind });
      });
    }
  }
  return { hidden, asked, unmatched, invokeTimeout: limits.invoke, gateTimeout: limits.gate };
}

function hiddenBy(tool: string, layers: readonly ToolLayer[]): RuleSource | null {
  for (const layer of layers) {
    const deny = layer.choice.deny?.findIndex((p) => matchesTool(p, tool)) ?? -1;
    if (deny >= 0) return { source: layer.source, rule: path([...layer.at, "deny", deny]), pattern: layer.choice.deny![deny]!, kind: "deny" };
    const allow = layer.choice.allow;
    if (allow && !allow.some((p) => matchesTool(p, tool))) return { source: layer.source, rule: path([...layer.at, "allow"]), pattern: null, kind: "allow" };
  }
  return null;
}

function firstMatch(tool: string, layers: readonly ToolLayer[], kind: "ask"): RuleSource | null {
  for (const layer of layers) {
    const i = layer.choice[kind]?.findIndex((p) => matchesTool(p, tool)) ?? -1;
    if (i >= 0) return { source: layer.source, rule: path([...layer.at, kind, i]), pattern: layer.choice[kind]![i]!, kind };
  }
  return null;
}

/** Where `enabled: false` is written for the plugin `name`: in the user's file, the project's, both or neither. */
export function disabledBy(rules: ConfigRules): { user: RuleSource | null; project: RuleSource | null } {
  const at = path(["plugins", rules.name, "enabled"]);
  const user = rules.user?.enabled === false ? { source: rules.userFile, rule: at, pattern: null, kind: "enabled" as const } : null;
  const project = rules.project?.plugins.get(rules.name)?.enabled === false ? { source: rules.project.path, rule: at, pattern: null, kind: "enabled" as const } : null;
  return { user, project };
}

/**
 * How much of the model's context a tool takes, approximately: the UTF-8 bytes of the JSON a
 * model API is sent for it (name, description, inputSchema), and that ÷ 4 as tokens — the usual
 * rule of thumb for English text and JSON with BPE tokenizers; the real count varies by model.
 */
export const COST_ESTIMATE = "tokens ≈ UTF-8 bytes of {name, description, inputSchema} as JSON ÷ 4";

export function contextCost(tool: Tool): { bytes: number; tokens: number } {
  const bytes = Buffer.byteLength(JSON.stringify({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema }), "utf8");
  return { bytes, tokens: Math.ceil(bytes / 4) };
}
