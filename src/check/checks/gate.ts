/**
 * The gate of each "dynamic" tool: how long it takes (the worst of many calls, against the 500 ms
 * deadline), and what it answers (NULL for no prompt, {display} to ask; JSON null is not NULL;
 * a `sandbox` lease, when it answers one, a sandbox no wider than the plugin's).
 */
import { outcomeOf, showArgs } from "../answers.ts";
import { callArguments, wrongTypeCalls } from "../arguments.ts";
import type { CheckContext } from "../context.ts";
import type { Answer } from "../host.ts";
import { fail, pass, plural, quote, skip, type Verdict, warn } from "../report.ts";
import * as v from "valibot";
import { toProblems } from "../../protocol/issues.ts";
import { type SandboxDeclaration, SandboxSchema } from "../../protocol/sandbox.ts";
import { wideningsOf } from "../../sandbox/widening.ts";

/** What is wrong with a gate's per-call sandbox lease (issue 39 point 6): not a sandbox, or wider than the plugin's; null when it is fine. */
function leaseProblem(sandbox: unknown, effective: SandboxDeclaration | null): { widens: boolean; text: string } | null {
  const lease = v.safeParse(SandboxSchema, sandbox);
  if (!lease.success) return { widens: false, text: toProblems(lease.issues, "sandbox").map((p) => p.message).join("; ") };
  const widenings = wideningsOf(lease.output, effective);
  return widenings.length ? { widens: true, text: widenings.map((w) => `sandbox.${w.at}: ${w.message}`).join("; ") } : null;
}

interface GateCall {
  tool: string;
  args: Record<string, unknown>;
  answer: Answer;
}

const CALLS_PER_TOOL = 20;
/** "Well under" the deadline: a gate this slow is a gate doing work it should not. */
const SLOW_MS = 100;

function gateCalls(ctx: CheckContext): Promise<GateCall[] | string> {
  return ctx.memo("gate", async () => {
    const calls: GateCall[] = [];
    for (const tool of ctx.tools.filter((t) => t.gated === "dynamic")) {
      const valid = callArguments(tool.inputSchema, 6).map((c) => c.args);
      const args = [...valid, {}, ...wrongTypeCalls(tool.inputSchema, valid[0] ?? {}).map((w) => w.args)];
      for (let i = 0; i < CALLS_PER_TOOL; i++) {
        const host = await ctx.running();
        if (typeof host === "string") return host;
        const a = args[i % args.length]!;
        const answer = await host.request({ kind: "gate", tool: tool.name, arguments: a }, ctx.timeouts.gateMs);
        calls.push({ tool: tool.name, args: a, answer });
        // A gate past its deadline is still running in native code: one is enough to know.
        if (answer.kind === "error") break;
      }
    }
    return calls;
  });
}

const noDynamic = (ctx: CheckContext) => !ctx.tools.some((t) => t.gated === "dynamic");

export async function checkGateSpeed(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  if (noDynamic(ctx)) return pass('no tool is gated "dynamic", so gate is never called');
  const calls = await gateCalls(ctx);
  if (typeof calls === "string") return skip(calls);
  const late = calls.filter((c) => c.answer.kind === "error" && c.answer.error.code === "E_TIMEOUT");
  if (late.length) {
    return fail(`the gate of ${[...new Set(late.map((c) => c.tool))].join(", ")} took longer than the ${ctx.timeouts.gateMs} ms deadline (on ${showArgs(late[0]!.args)}); the user is then asked with a generic wording and without "Always"`,
      "decide in gate from the arguments alone: no disk, no network, no lock a long invoke holds");
  }
  const timed = calls.filter((c) => c.answer.kind === "reply");
  if (timed.length === 0) return skip("no gate call answered (see gate-answers)");
  const worst = timed.reduce((w, c) => (c.answer.ms > w.answer.ms ? c : w));
  const summary = `${plural(timed.length, "gate call")} for ${plural(new Set(timed.map((c) => c.tool)).size, "tool")}: the worst took ${worst.answer.ms.toFixed(1)} ms (${worst.tool} ${showArgs(worst.args)}), against a deadline of ${ctx.timeouts.gateMs} ms`;
  if (worst.answer.ms > SLOW_MS) return warn(summary, `keep gate well under the deadline (under ${SLOW_MS} ms): a busy machine adds to it, and past the deadline the user is asked with a generic wording`);
  return pass(summary);
}

export async function checkGateAnswers(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  if (noDynamic(ctx)) return pass('no tool is gated "dynamic"');
  const calls = await gateCalls(ctx);
  if (typeof calls === "string") return skip(calls);
  const breaches: string[] = [];
  const odd: string[] = [];
  let none = 0;
  let asks = 0;
  for (const { tool, args, answer } of calls) {
    const call = `${tool} ${showArgs(args)}`;
    if (answer.kind === "error" && answer.error.code === "E_TIMEOUT") continue; // gate-speed says so
    const outcome = outcomeOf(answer);
    if (outcome.kind !== "ok") {
      breaches.push(`${call}: ${outcome.text}`);
      continue;
    }
    if (!("gate" in outcome.reply)) {
      none++;
      continue;
    }
    const value = outcome.reply.gate;
    if (value === null) breaches.push(`${call}: returned the JSON text null, which the host treats as a failed gate; NULL (no string at all) means "no prompt"`);
    else if (typeof value !== "object" || Array.isArray(value)) odd.push(`${call}: returned ${quote(JSON.stringify(value))}, not an object`);
    else {
      const { display, alwaysAskable, sandbox } = value as Record<string, unknown>;
      const lease = sandbox === undefined ? null : leaseProblem(sandbox, ctx.inspection?.sandbox.effective ?? null);
      if (typeof display !== "string" || display.trim() === "") odd.push(`${call}: returned ${quote(JSON.stringify(value))}, with no text in "display"`);
      else if (alwaysAskable !== undefined && typeof alwaysAskable !== "boolean") odd.push(`${call}: "alwaysAskable" is ${JSON.stringify(alwaysAskable)}, not a boolean`);
      else if (lease?.widens) breaches.push(`${call}: its "sandbox" lease would widen the plugin's sandbox (${lease.text}), so the call is refused (E_SANDBOX)`);
      else if (lease) odd.push(`${call}: its "sandbox" lease is not a sandbox (${lease.text})`);
      else asks++;
    }
  }
  const fix = 'return NULL for "no prompt", or a fresh {"display": "<what the user is asked>"}; never the text null, and never a crash';
  if (breaches.length) return fail(counted(breaches), fix);
  if (odd.length) {
    return warn(`${counted(odd)}: each counts as a failed gate, asked with a generic wording and never "Always" (fine if that is a deliberate fail-safe)`, fix);
  }
  return pass(`${plural(none + asks, "gate answer")}: ${none} NULL (no prompt), ${asks} asking with a display`);
}

/** Each distinct sentence once, with how often it was seen; at most five. */
function counted(sentences: string[]): string {
  const seen = new Map<string, number>();
  for (const s of sentences) seen.set(s, (seen.get(s) ?? 0) + 1);
  return [...seen].slice(0, 5).map(([s, n]) => (n > 1 ? `${s} (${n} times)` : s)).join("; ");
}
