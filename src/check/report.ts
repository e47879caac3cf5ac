/**
 * What `cxagent check` reports: one verdict per check, each with what was seen and how to fix it.
 */

/**
 * pass: the plugin keeps this part of the contract. warn: it works, but a user or a model will
 * notice. fail: a contract breach. skip: it could not be looked at (an earlier failure stopped it,
 * or it does not apply to this kind of plugin); a skip never fails a check on its own.
 */
export type CheckStatus = "pass" | "warn" | "fail" | "skip";

export interface CheckOutcome {
  /** Stable, short: "exports", "free", "gate-speed", ... */
  id: string;
  /** What the check asks, in a few words. */
  title: string;
  status: CheckStatus;
  /** What was seen, in a sentence or a few (plugin text quoted as it is; the CLI makes it inert). */
  seen: string;
  /** How to fix it; null when it passed. */
  fix: string | null;
}

/** The kinds of plugin cxagent loads (protocol/host-args.ts PLUGIN_KINDS); each check says which it applies to. */
export type { PluginKind } from "../protocol/host-args.ts";
import type { PluginKind } from "../protocol/host-args.ts";

export interface CheckReport {
  plugin: string;
  version: string | null;
  library: string;
  kind: PluginKind;
  /** True when no check failed. */
  ok: boolean;
  /**
   * The working folder the tools were called in: the project folder (--cwd), a scratch copy of a
   * fixture folder (--fixture; `folder` is the fixture), or an empty scratch folder.
   */
  ranIn: { folder: string | null; what: "project" | "fixture" | "empty" };
  counts: Record<CheckStatus, number>;
  checks: CheckOutcome[];
  /** Processes the plugin left behind that the check ended (they were proven its descendants). */
  ended: number[];
}

export function countOutcomes(checks: readonly CheckOutcome[]): Record<CheckStatus, number> {
  const counts: Record<CheckStatus, number> = { pass: 0, warn: 0, fail: 0, skip: 0 };
  for (const c of checks) counts[c.status]++;
  return counts;
}

/** A verdict, with the words of each status in one place. */
export const pass = (seen: string): Omit<CheckOutcome, "id" | "title"> => ({ status: "pass", seen, fix: null });
export const warn = (seen: string, fix: string): Omit<CheckOutcome, "id" | "title"> => ({ status: "warn", seen, fix });
export const fail = (seen: string, fix: string): Omit<CheckOutcome, "id" | "title"> => ({ status: "fail", seen, fix });
export const skip = (seen: string): Omit<CheckOutcome, "id" | "title"> => ({ status: "skip", seen, fix: null });

export type Verdict = Omit<CheckOutcome, "id" | "title">;

/** "1 string", "3 strings". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A bounded quote of plugin text for a sentence. */
export function quote(text: string, max = 100): string {
  const shown = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(shown);
}

/** A message that may span lines (a list of problems, a tail of output) as one line. */
export function oneLine(message: string): string {
  return message.replace(/:\n\s*-\s+/g, ": ").replace(/\n\s*-\s+/g, "; ").replace(/\s*\n\s*/g, " ");
}
