/**
 * A call's deadline, decided in one place: a pure function of what the call asked for, the
 * tool's own default (a Cortex timeout_secs) and the config files' limit (invokeTimeoutMs,
 * gateTimeoutMs), which says where the deadline came from. Calls (calls.ts) arms it and, when it
 * passes, words the one E_TIMEOUT naming that source (timeoutError).
 */
import { CxError } from "../errors.ts";
import { type Limit, ruleText } from "./tool-policy.ts";

/** What a call asked for. */
export interface DeadlineRequest {
  /** Milliseconds before the call is abandoned with E_TIMEOUT. No deadline unless given. */
  timeoutMs?: number;
  /** Each progress report restarts the timeout, up to `maxMs` in all (default 10 × timeoutMs). */
  resetOnProgress?: boolean;
  maxMs?: number;
}

/** Who set a call's deadline: the call itself, the tool's declared default, or a config file's limit. */
export type DeadlineSource =
  | { from: "call" }
  | { from: "tool"; plugin: string; tool: string; ms: number }
  | { from: "policy"; plugin: string; limit: Limit };

export interface Deadline extends DeadlineRequest {
  source: DeadlineSource;
}

const CALL: DeadlineSource = { from: "call" };

/**
 * An invoke's deadline. A call that gives none gets the tool's default, when the plugin declares
 * one; then the limit bounds it, when one is set and the call could take longer: it may take at
 * most that long in all, progress or not.
 */
export function invokeDeadline(call: DeadlineRequest, plugin: string, tool: string, toolDefaultMs: number | null, limit: Limit | null): Deadline {
  const own: Deadline = call.timeoutMs === undefined && toolDefaultMs !== null
    ? { timeoutMs: toolDefaultMs, resetOnProgress: false, maxMs: undefined, source: { from: "tool", plugin, tool, ms: toolDefaultMs } }
    : { timeoutMs: call.timeoutMs, resetOnProgress: call.resetOnProgress, maxMs: call.maxMs, source: CALL };
  if (!limit) return own;
  const ms = own.timeoutMs;
  const ownCap = ms === undefined ? Infinity : own.resetOnProgress ? (own.maxMs ?? ms * 10) : ms;
  if (ownCap <= limit.ms) return own;
  const source: DeadlineSource = { from: "policy", plugin, limit };
  return ms === undefined || !own.resetOnProgress
    ? { timeoutMs: Math.min(ms ?? Infinity, limit.ms), resetOnProgress: false, maxMs: undefined, source }
    : { timeoutMs: Math.min(ms, limit.ms), resetOnProgress: true, maxMs: limit.ms, source };
}

/** A dynamic gate's deadline: the session's (default GATE_MS), or the config's limit when that is shorter. */
export function gateDeadline(sessionMs: number | undefined, defaultMs: number, limit: Limit | null): { ms: number; byLimit: boolean } {
  if (!limit) return { ms: sessionMs ?? defaultMs, byLimit: false };
  const ms = Math.min(limit.ms, sessionMs ?? limit.ms);
  return { ms, byLimit: ms === limit.ms };
}

/** What a gate that did not answer in time failed by, as the gate's decision says it. */
export function gateLateWords(deadline: { ms: number; byLimit: boolean }, limit: Limit | null): string {
  return `it took longer than ${deadline.ms} ms${deadline.byLimit && limit ? `, the limit ${ruleText(limit.by)} sets` : ""}`;
}

/**
 * The one E_TIMEOUT: `what` (the request) and `why` (which timer passed), and where the
 * deadline came from.
 */
export function timeoutError(label: string, what: string, why: string, timeoutMs: number, source: DeadlineSource = CALL): CxError {
  const said = `plugin '${label}': ${what} ${why}`;
  const runsOn = "the plugin's call runs on (it cannot be interrupted) and its late answer will be discarded";
  switch (source.from) {
    case "call":
      return new CxError("E_TIMEOUT", said, {
        hint: `${runsOn}; allow it more time if it needs more`,
        next: { do: "raise-timeout", ms: timeoutMs },
      });
    case "tool":
      return new CxError("E_TIMEOUT", `${said} (the default deadline plugin '${source.plugin}' declares for ${source.tool}: timeout_secs ${source.ms / 1000})`, {
        hint: `${runsOn}; give the call a longer deadline of its own if it needs more time`,
        next: { do: "raise-timeout", ms: source.ms },
        details: { defaultMs: source.ms },
      });
    case "policy": {
      const { limit } = source;
      return new CxError("E_TIMEOUT", `${said} (calls of plugin '${source.plugin}' may take at most ${limit.ms} ms, the limit ${ruleText(limit.by)} sets)`, {
        hint: `${runsOn}; a longer deadline needs a higher limit in ${limit.by.source} (a project's .cxagent/config.json can only lower it)`,
        details: { limitMs: limit.ms, ...limit.by },
      });
    }
  }
}
