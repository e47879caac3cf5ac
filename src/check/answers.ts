/**
 * What a request's answer means for a check: the plugin crashed, missed its deadline, broke the
 * reply rules, refused (its own ok:false), or answered.
 */
import type { Reply } from "../protocol/wire.ts";
import type { Answer } from "./host.ts";

export type Outcome =
  | { kind: "crash" | "timeout" | "bad-reply" | "error"; text: string }
  | { kind: "refused"; text: string }
  | { kind: "ok"; reply: Extract<Reply, { ok: true }> };

export function outcomeOf(answer: Answer): Outcome {
  if (answer.kind === "error") {
    const { code, message } = answer.error;
    if (code === "E_CRASHED") return { kind: "crash", text: `crashed (${/\((signal [A-Z0-9]+|exit code -?\d+)\)/.exec(message)?.[1] ?? "it ended"})` };
    if (code === "E_TIMEOUT") return { kind: "timeout", text: `did not answer within ${Math.round(answer.ms)} ms` };
    return { kind: "error", text: message.split("\n")[0]! };
  }
  const reply = answer.reply;
  if (reply.ok) return { kind: "ok", reply };
  if (reply.fault === "bad-reply") return { kind: "bad-reply", text: reply.error };
  if (reply.fault) return { kind: "error", text: reply.error };
  return { kind: "refused", text: reply.error };
}

/** A crash, a missed deadline, a broken reply or a host fault: never a clean answer. */
export function isBreach(outcome: Outcome): outcome is Extract<Outcome, { text: string }> & { kind: "crash" | "timeout" | "bad-reply" | "error" } {
  return outcome.kind === "crash" || outcome.kind === "timeout" || outcome.kind === "bad-reply" || outcome.kind === "error";
}

/** Arguments for a sentence, bounded. */
export function showArgs(args: unknown): string {
  const text = JSON.stringify(args);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
