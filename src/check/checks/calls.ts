/**
 * The tools' calls: with arguments from each inputSchema (its examples first), the call without
 * arguments and calls with a wrong type, and the same calls many at once.
 */
import { type JobResult, toJobResult } from "../../protocol/result.ts";
import type { Tool } from "../../protocol/manifest.ts";
import { isBreach, type Outcome, outcomeOf, showArgs } from "../answers.ts";
import { callArguments, requiredOf, wrongTypeCalls } from "../arguments.ts";
import type { CheckContext } from "../context.ts";
import type { Answer } from "../host.ts";
import { fail, pass, plural, quote, skip, type Verdict, warn } from "../report.ts";
import { profileOf } from "../../kinds/index.ts";

type Args = Record<string, unknown>;

export interface CallRecord {
  tool: string;
  args: Args;
  from: "example" | "generated";
  answer: Answer;
}

/** Without a sidecar (a Cortex plugin) the tools are those it described: none described, and why, when it did not load. */
async function undescribed(ctx: CheckContext): Promise<string | null> {
  if (profileOf(ctx.kind).sidecar || ctx.described) return null;
  const host = await ctx.running();
  return typeof host === "string" ? host : null;
}

async function invoke(ctx: CheckContext, tool: string, args: Args): Promise<Answer | string> {
  const host = await ctx.running();
  if (typeof host === "string") return host;
  const answer = await host.request({ kind: "invoke", tool, arguments: args }, ctx.timeouts.callMs);
  // A call past its deadline runs on in native code: the tool is not called again in this run.
  if (answer.kind === "error" && answer.error.code === "E_TIMEOUT") ctx.hung.add(tool);
  return answer;
}

/** Each tool called with up to three argument objects: its schema's examples, then generated ones. */
function resultCalls(ctx: CheckContext): Promise<{ records: CallRecord[]; ungenerated: string[] } | string> {
  return ctx.memo("results", async () => {
    if (ctx.runnable !== null) return ctx.runnable;
    const unloaded = await undescribed(ctx);
    if (unloaded !== null) return unloaded;
    const records: CallRecord[] = [];
    const ungenerated: string[] = [];
    for (const tool of ctx.tools) {
      const calls = callArguments(tool.inputSchema, 3);
      if (calls.length === 0) ungenerated.push(tool.name);
      for (const { args, from } of calls) {
        if (ctx.hung.has(tool.name)) break;
        const answer = await invoke(ctx, tool.name, args);
        if (typeof answer === "string") return answer;
        records.push({ tool: tool.name, args, from, answer });
      }
    }
    return { records, ungenerated };
  });
}

/** The JobResult of an answer that carried one. */
function jobResult(outcome: Outcome): JobResult | "not-an-object" | null {
  if (outcome.kind !== "ok") return null;
  const r = outcome.reply.result;
  if (r === null || typeof r !== "object" || Array.isArray(r)) return "not-an-object";
  return toJobResult(r as Record<string, unknown>, 0);
}

export async function checkResults(ctx: CheckContext): Promise<Verdict> {
  const made = await resultCalls(ctx);
  if (typeof made === "string") return skip(made);
  if (ctx.tools.length === 0) return pass("no tools to call");
  const breaches: string[] = [];
  const failures: string[] = [];
  let succeeded = 0;
  for (const { tool, args, from, answer } of made.records) {
    const outcome = outcomeOf(answer);
    const call = `${tool} ${showArgs(args)}${from === "example" ? " (its schema's example)" : ""}`;
    const result = jobResult(outcome);
    if (isBreach(outcome)) breaches.push(`${call}: ${outcome.text}`);
    else if (outcome.kind === "refused") failures.push(`${call} answered ok:false: ${outcome.text}`);
    else if (result === "not-an-object") breaches.push(`${call}: ok:true with a result that is not a JobResult object`);
    // The plugin host reads bytes that are not UTF-8 as U+FFFD: the answer was not text.
    else if (result && JSON.stringify(result).includes("\uFFFD")) breaches.push(`${call}: its answer holds U+FFFD, which the plugin host puts where bytes are not UTF-8`);
    else if (result && !result.success) failures.push(`${call} reported success:false${result.errorMessage ? `: ${result.errorMessage}` : ""}`);
    else succeeded++;
  }
  if (breaches.length) {
    return fail(some(breaches), "answer every call, in time, with a result envelope: {\"ok\": true, \"result\": {\"success\": true, \"output\": {\"content\": \"...\"}}} or {\"ok\": false, \"error\": \"...\"}, and never crash");
  }
  const cannot = made.ungenerated.length ? `not called with valid arguments: ${made.ungenerated.join(", ")} (no arguments could be made from ${made.ungenerated.length === 1 ? "its" : "their"} inputSchema)` : "";
  if (failures.length || cannot) {
    return warn(some([...failures, cannot].filter(Boolean)),
      "if those arguments are valid, the tool should do its job with them; give its inputSchema \"examples\" (an array of argument objects) that work, which check calls first");
  }
  return pass(`${plural(succeeded, "call")} to ${plural(ctx.tools.length, "tool")}, with arguments from their inputSchema, returned a valid result envelope with success: true`);
}

export async function checkContent(ctx: CheckContext): Promise<Verdict> {
  const made = await resultCalls(ctx);
  if (typeof made !== "string" && ctx.tools.length === 0) return pass("no tools to call");
  if (typeof made === "string") return skip(made);
  const missing: string[] = [];
  let looked = 0;
  for (const { tool, args, answer } of made.records) {
    const result = jobResult(outcomeOf(answer));
    if (!result || result === "not-an-object" || !result.success) continue;
    looked++;
    const content = result.output.content;
    if (typeof content !== "string") missing.push(`${tool} ${showArgs(args)}: output.content is ${content === undefined ? "missing" : `not a string (${typeof content})`}`);
    else if (content.trim() === "") missing.push(`${tool} ${showArgs(args)}: output.content is empty`);
  }
  if (looked === 0) {
    // Not a pass: the success path (its crashes, its replies, its content) was never reached.
    return warn("no call succeeded (see results), so no successful result was seen: what a tool returns on success was not checked",
      "give each tool's inputSchema \"examples\" that succeed; a tool that reads the project needs it: run check with --cwd <project> or --fixture <folder>");
  }
  if (missing.length) {
    return fail(`${some(missing)}: a model gets the rest of the output as JSON, or nothing, not an answer written for it, and may misreport a good call`,
      "put the text the model should read in the result's output.content; when there is nothing to report, say so in words");
  }
  return pass(`every successful call (${looked}) put text in output.content`);
}

export async function checkBadArguments(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const unloaded = await undescribed(ctx);
  if (unloaded !== null) return skip(unloaded);
  if (ctx.tools.length === 0) return pass("no tools to call");
  const made = await resultCalls(ctx);
  if (typeof made === "string") return skip(made);
  const breaches: string[] = [];
  const accepted: string[] = [];
  let calls = 0;
  for (const tool of ctx.tools) {
    const base = made.records.find((r) => r.tool === tool.name)?.args ?? {};
    const required = requiredOf(tool.inputSchema);
    const tries: { args: Args; what: string; shouldFail: boolean }[] = [
      { args: {}, what: "without arguments", shouldFail: required.length > 0 },
      ...wrongTypeCalls(tool.inputSchema, base).map((w) => ({ args: w.args, what: `with '${w.property}' = ${JSON.stringify(w.value)} (the schema says ${w.expected})`, shouldFail: true })),
    ];
    for (const t of tries) {
      if (ctx.hung.has(tool.name)) break;
      const answer = await invoke(ctx, tool.name, t.args);
      if (typeof answer === "string") return skip(answer);
      calls++;
      const outcome = outcomeOf(answer);
      if (isBreach(outcome)) breaches.push(`${tool.name} ${t.what}: ${outcome.text}`);
      else if (t.shouldFail && jobResult(outcome) !== null && (jobResult(outcome) as JobResult).success) {
        accepted.push(`${tool.name} ${t.what} reported success${required.length && t.what === "without arguments" ? ` although ${required.map((r) => `'${r}'`).join(", ")} ${required.length === 1 ? "is" : "are"} required` : ""}`);
      }
    }
  }
  if (calls === 0) return skip("every tool outlived its deadline (see results)");
  if (breaches.length) {
    return fail(some(breaches), "check every argument: a model sends missing keys, wrong types and numbers as strings; answer {\"ok\": false, \"error\": \"argument 'x' must be ...\"}, never crash");
  }
  if (accepted.length) return warn(`${some(accepted)}: a wrong call should fail with a message the model can act on`, "check each argument's presence and type, and answer {\"ok\": false, \"error\": ...} naming it");
  return pass(`${plural(calls, "call")} without arguments or with a wrong type ${calls === 1 ? "was" : "were"} answered cleanly (a failure naming the problem, or a result)`);
}

/** What a person reads of an answer: its output.content, else its output, else the failure. */
function shown(answer: Answer): string {
  const outcome = outcomeOf(answer);
  if (outcome.kind !== "ok") return `${outcome.kind}: ${outcome.text}`;
  const result = jobResult(outcome);
  if (!result || result === "not-an-object") return JSON.stringify(outcome.reply.result ?? null);
  const content = result.output.content;
  return typeof content === "string" ? content : JSON.stringify(result.output);
}

/** A call's answer reduced to what must not depend on other calls running: the result without its duration, or the failure. */
function fingerprint(answer: Answer): string {
  const outcome = outcomeOf(answer);
  if (outcome.kind !== "ok") return `${outcome.kind}: ${outcome.text}`;
  const result = jobResult(outcome);
  if (!result || result === "not-an-object") return JSON.stringify(outcome.reply.result ?? null);
  const { durationMs: _duration, ...rest } = result;
  return JSON.stringify(rest);
}

const ROUNDS = 5;
const AT_ONCE = 48;

export async function checkConcurrency(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const unloaded = await undescribed(ctx);
  if (unloaded !== null) return skip(unloaded);
  if (ctx.tools.length === 0) return pass("no tools to call");
  const host = await ctx.running();
  if (typeof host === "string") return skip(host);
  // Up to four argument objects per tool, so calls running at once differ and a shared buffer shows.
  const unfed: string[] = [];
  const pairs: { tool: Tool; args: Args }[] = ctx.tools.filter((t) => !ctx.hung.has(t.name)).flatMap((tool) => {
    const calls = callArguments(tool.inputSchema, 4);
    if (calls.length === 0) unfed.push(tool.name); // called with {} all the same: said in the verdict
    return (calls.length ? calls : [{ args: {} }]).map((c) => ({ tool, args: c.args }));
  });
  if (pairs.length === 0) return skip("every tool outlived its deadline (see results)");
  const alone = new Map<number, string | null>();
  const aloneShown = new Map<number, string>();
  for (const [i, pair] of pairs.entries()) {
    const a = await host.request({ kind: "invoke", tool: pair.tool.name, arguments: pair.args }, ctx.timeouts.callMs);
    const b = await host.request({ kind: "invoke", tool: pair.tool.name, arguments: pair.args }, ctx.timeouts.callMs);
    if (!host.alive) return skip("the plugin crashed on a call made alone (see results)");
    const [fa, fb] = [fingerprint(a), fingerprint(b)];
    alone.set(i, fa === fb ? fa : null); // null: two identical calls made alone differ (a clock, a counter)
    aloneShown.set(i, shown(a));
  }
  const copies = Math.max(1, Math.floor(AT_ONCE / pairs.length));
  const batch = pairs.flatMap((_, i) => Array.from({ length: copies }, () => i)).slice(0, Math.max(AT_ONCE, pairs.length));
  const differences: string[] = [];
  let made = 0;
  let compared = 0;
  let differing = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const answers = await Promise.all(batch.map((i) => host.request({ kind: "invoke", tool: pairs[i]!.tool.name, arguments: pairs[i]!.args }, ctx.timeouts.callMs)));
    made += answers.length;
    const broken = answers.map(outcomeOf).find((o) => o.kind === "crash" || o.kind === "timeout");
    if (broken && "text" in broken) {
      return fail(`with ${batch.length} calls running at once (round ${round + 1} of ${ROUNDS}), the plugin ${broken.text}, though the same calls made one at a time did not`,
        "calls run at once on several threads of one process: guard static state that changes after start with a lock or atomics, and keep per-call data on the stack or the heap");
    }
    for (const [k, answer] of answers.entries()) {
      const i = batch[k]!;
      const expected = alone.get(i);
      if (expected === null || expected === undefined) continue;
      compared++;
      const got = fingerprint(answer);
      if (got === expected) continue;
      differing++;
      const difference = `${pairs[i]!.tool.name} ${showArgs(pairs[i]!.args)}: alone ${quote(aloneShown.get(i)!, 120)}, at once ${quote(shown(answer), 120)}`;
      if (differences.length < 3 && !differences.includes(difference)) differences.push(difference);
    }
  }
  const varying = [...alone.values()].filter((v) => v === null).length;
  if (differences.length) {
    return fail(`${differing} of ${compared} calls made at once answered differently from the same calls made one at a time, e.g. ${differences.join("; ")}`,
      "calls run at once on several threads of one process: a static buffer or a counter shared by calls needs a lock, or per-call storage");
  }
  const note = (varying ? `; ${plural(varying, "call")} answered differently even one at a time (a clock or a counter?), so only crashes were looked for there` : "") +
    (unfed.length ? `; ${unfed.join(", ")} called with {} (no arguments could be made from ${unfed.length === 1 ? "its" : "their"} inputSchema)` : "");
  return pass(`${made} calls in ${ROUNDS} rounds of ${batch.length} at once answered as the same calls made one at a time (${compared} compared)${note}`);
}

/** The first few sentences, and how many more there were. */
function some(sentences: readonly string[], shown = 5): string {
  const rest = sentences.length - shown;
  return sentences.slice(0, shown).join("; ") + (rest > 0 ? `; and ${rest} more` : "");
}
