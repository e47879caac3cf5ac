/**
 * What a plugin's tools may do in this session, decided before it loads (session/selection.ts
 * computes it from the user's config.json, the project's .cxagent/config.json and the API's
 * options): which tools are hidden — from every list and from every call — which ask on every
 * call, and the limits on its calls. Each entry says which file and which rule made it so, and
 * the Plugin handle enforces it before anything reaches the plugin host.
 */
import { CxError } from "../errors.ts";

/** One rule, where it was written: the file (or API option) and its JSON path there. */
export interface RuleSource {
  /** A config file's path, or the API option: `Session.open({ tools })`, `load(ref, { tools })`. */
  source: string;
  /** Its JSON path in that document: `plugins.calculator.tools.deny[0]`. */
  rule: string;
  /** The pattern it holds, or null (an allow list none of whose patterns matched; a limit). */
  pattern: string | null;
  kind: "deny" | "allow" | "ask" | "limit" | "enabled";
}

export interface Limit {
  ms: number;
  by: RuleSource;
}

export interface ToolPolicy {
  /** Hidden tools: no list shows them, no call reaches them. By tool name. */
  hidden: ReadonlyMap<string, RuleSource>;
  /** Visible tools that ask on every call, whatever their manifest says; no grant answers them. */
  asked: ReadonlyMap<string, RuleSource>;
  /** Patterns that match none of the plugin's tools (warned about, never silently ignored). */
  unmatched: readonly RuleSource[];
  /** The longest any invoke may take, when a config file sets one. */
  invokeTimeout: Limit | null;
  /** The gate's deadline, when a config file sets one. */
  gateTimeout: Limit | null;
}

export const OPEN_POLICY: ToolPolicy = { hidden: new Map(), asked: new Map(), unmatched: [], invokeTimeout: null, gateTimeout: null };

/** `<file>: <path> ("<pattern>")`: where a rule is, in one line. */
export function ruleText(r: RuleSource): string {
  return `${r.source}: ${r.rule}${r.pattern === null ? "" : ` (${JSON.stringify(r.pattern)})`}`;
}

/** Which rule hides a tool: "by <file>: <path> ..." */
export function hiddenBy(r: RuleSource): string {
  return r.kind === "allow" ? `by ${r.source}: ${r.rule}, none of whose patterns matches it` : `by ${ruleText(r)}`;
}

/** Why a tool is hidden, in words: "hidden by <file>: <path> ..." */
export function hiddenBecause(r: RuleSource): string {
  return `hidden ${hiddenBy(r)}`;
}

/** Why a tool asks on every call, in words. */
export function askedBecause(r: RuleSource): string {
  return `asks on every call because of ${ruleText(r)}`;
}

/** The warning for a pattern that matches nothing: a typo, or a tool the plugin no longer has. */
export function unmatchedText(plugin: string, r: RuleSource): string {
  return `${ruleText(r)} matches no tool of plugin '${plugin}'; check its spelling against the plugin's tools`;
}

export function hiddenToolError(plugin: string, tool: string, r: RuleSource): CxError {
  return new CxError("E_TOOL_HIDDEN", `tool '${tool}' of plugin '${plugin}' is ${hiddenBecause(r)}, so it is neither listed nor called`, {
    hint: r.source.endsWith("config.json")
      ? `to use it, change that rule in ${r.source} (a project's .cxagent/config.json can only hide more)`
      : "to use it, leave it out of that option's tools",
    details: { plugin, tool, ...r },
  });
}
