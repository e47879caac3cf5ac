/**
 * The per-call permission decision (SPEC §7). The manifest's `gated` is the ceiling; a "dynamic"
 * tool's gate export may only narrow beneath it. The plugin's `display` is wording, never scope:
 * the host builds the rule itself, and a gate that fails in any way asks, with no Always.
 */
import * as v from "valibot";
import { preview, toProblems } from "../protocol/issues.ts";
import { type SandboxDeclaration, SandboxSchema } from "../protocol/sandbox.ts";
import type { Tool } from "../protocol/manifest.ts";
import { ruleFor } from "../protocol/rules.ts";
import type { RuleSource } from "./tool-policy.ts";
import type { GivenReference } from "../results/refs.ts";

/** How long a "dynamic" tool's gate may take before it counts as failed (SPEC §12). */
export const GATE_MS = 500;

export interface GateDecision {
  /** Whether a person (or the caller's policy) must allow this call. */
  ask: boolean;
  /** What to show when asking. */
  display: string | null;
  /** Whether "Always" may be offered (and a stored grant may answer). */
  alwaysOffered: boolean;
  /** The rule an Always grant would store: `plugin <name> tool <tool>`. */
  rule: string | null;
  source: "manifest" | "gate" | "gate-failed";
  /** Whether a stored grant already allows it in this project. */
  granted: boolean;
  /**
   * The config rule that makes this tool ask on every call (`tools.ask`), or null. It only adds a
   * question: Always is then never offered and no stored grant answers.
   */
  forcedBy: RuleSource | null;
  /**
   * A "dynamic" gate's per-call lease (issue 39 point 6): the narrower sandbox the call is to run
   * under, as the gate answered it; the plugin intersects it with its effective sandbox, refuses
   * one that would widen, and serves the call from a host started with exactly that.
   */
  lease?: SandboxDeclaration;
}

/** What the gate export answered, as the plugin host relayed it. */
export type GateAnswer = { kind: "null" } | { kind: "value"; value: unknown } | { kind: "failed"; why: string };

export function genericDisplay(plugin: string, tool: string, args: unknown): string {
  const shown = JSON.stringify(args);
  return `${plugin} wants to run ${tool}${shown && shown !== "{}" ? ` with ${preview(shown, 200)}` : ""}`;
}

/**
 * Decides from the manifest and, for "dynamic" tools, the gate's answer; then `forcedBy`, a
 * config rule that makes the tool ask on every call, can only make it ask where it would not, and
 * take Always (and any stored grant) away. `granted` tells whether a stored grant exists for the
 * rule in this project.
 */
export function decide(plugin: string, tool: Tool, args: unknown, answer: GateAnswer | null, granted: (rule: string) => boolean, forcedBy: RuleSource | null = null): GateDecision {
  const decision = decideFromPlugin(plugin, tool, args, answer, granted);
  if (!forcedBy) return decision;
  return {
    ask: true,
    display: decision.display ?? genericDisplay(plugin, tool.name, args),
    alwaysOffered: false,
    rule: ruleFor(plugin, tool.name),
    source: decision.source,
    granted: false,
    forcedBy,
    ...(decision.lease ? { lease: decision.lease } : {}),
  };
}

function decideFromPlugin(plugin: string, tool: Tool, args: unknown, answer: GateAnswer | null, granted: (rule: string) => boolean): GateDecision {
  const forcedBy = null;
  const rule = ruleFor(plugin, tool.name);
  if (tool.gated === false) return { ask: false, display: null, alwaysOffered: false, rule: null, source: "manifest", granted: false, forcedBy };
  if (tool.gated === true) {
    const alwaysOffered = tool.alwaysAskable;
    return { ask: true, display: genericDisplay(plugin, tool.name, args), alwaysOffered, rule, source: "manifest", granted: alwaysOffered && granted(rule), forcedBy };
  }
  const failed = (why: string): GateDecision => ({
    ask: true,
    display: `${genericDisplay(plugin, tool.name, args)} — its permission check did not answer (${why}), so it cannot be allowed for always`,
    alwaysOffered: false,
    rule,
    source: "gate-failed",
    granted: false,
    forcedBy,
  });
  if (!answer) return failed("no answer");
  if (answer.kind === "failed") return failed(answer.why);
  if (answer.kind === "null") return { ask: false, display: null, alwaysOffered: false, rule: null, source: "gate", granted: false, forcedBy };
  const value = answer.value;
  if (value === null) return failed("it returned JSON null, which is not NULL");
  if (typeof value !== "object" || Array.isArray(value)) return failed(`it returned ${Array.isArray(value) ? "an array" : typeof value}, not an object`);
  const { display, alwaysAskable, sandbox } = value as { display?: unknown; alwaysAskable?: unknown; sandbox?: unknown };
  if (typeof display !== "string") return failed("its answer has no string display");
  if (alwaysAskable !== undefined && typeof alwaysAskable !== "boolean") return failed("its alwaysAskable is not a boolean");
  const lease = sandbox === undefined ? null : v.safeParse(SandboxSchema, sandbox);
  if (lease && !lease.success) return failed(`its sandbox lease is not a sandbox (${toProblems(lease.issues, "sandbox").map((p) => p.message).join("; ")})`);
  // alwaysAskable only narrows: the manifest's false stays false.
  const alwaysOffered = tool.alwaysAskable && alwaysAskable !== false;
  return { ask: true, display, alwaysOffered, rule, source: "gate", granted: alwaysOffered && granted(rule), forcedBy, ...(lease ? { lease: lease.output } : {}) };
}

/** How a call that needs permission was answered: allowed this once, allowed always (a grant), or denied. */
export type PermissionAnswer = "once" | "always" | "deny";

export interface PermissionRequest {
  plugin: string;
  tool: string;
  arguments: Record<string, unknown>;
  decision: GateDecision;
  /** The result references the arguments held, replaced by their text (issue 41): where, size, origin. */
  references?: readonly GivenReference[];
}

/** The three answers, for checking one that arrived at run time. */
export const PERMISSION_ANSWERS: readonly PermissionAnswer[] = ["once", "always", "deny"];

/**
 * Decides a call that needs permission: a person at a prompt, or a script's own policy. A promise
 * may resolve to any string: TypeScript (5.9) widens `async () => "once"` to Promise<string>
 * against a return type of `PermissionAnswer | Promise<PermissionAnswer>`, so that form did not
 * type-check. The answer is checked when it arrives instead: anything but once, always or deny
 * fails the call with E_INVALID_INPUT, never allows it.
 */
export type PermissionHandler = (request: PermissionRequest) => PermissionAnswer | Promise<PermissionAnswer | (string & {})>;
