/**
 * The optional exports, when there are any: command (each declared command, its answer's shape),
 * poll (what it submits, and client declared), and attach (host-table reports only inside calls,
 * and none after stop).
 */
import * as v from "valibot";
import { CommandResultSchema } from "../../protocol/result.ts";
import { isBreach, outcomeOf } from "../answers.ts";
import { type CheckContext, loadCheck } from "../context.ts";
import { fail, pass, plural, quote, skip, type Verdict, warn } from "../report.ts";

async function exportsOf(ctx: CheckContext): Promise<readonly string[] | string> {
  if (ctx.runnable !== null) return ctx.runnable;
  const first = await ctx.first();
  if (first instanceof Error) return `the plugin did not load (see ${loadCheck(ctx)})`;
  return first.host.ready.exports;
}

export async function checkCommands(ctx: CheckContext): Promise<Verdict> {
  const exports = await exportsOf(ctx);
  if (typeof exports === "string") return skip(exports);
  const declared = ctx.sidecar?.commands ?? [];
  const exported = exports.includes("command");
  if (declared.length === 0) {
    return exported
      ? warn("it exports cxagent_plugin_command but declares no commands, so it is never called", "declare each command in the manifest's \"commands\", or remove the export")
      : pass("no commands declared, none exported");
  }
  const breaches: string[] = [];
  let answered = 0;
  for (const command of declared) {
    for (const text of ["", "check"]) {
      const host = await ctx.running();
      if (typeof host === "string") return skip(host);
      const answer = await host.request({ kind: "command", name: command.name, text }, ctx.timeouts.callMs);
      const outcome = outcomeOf(answer);
      const call = `/${command.name}${text ? ` ${text}` : ""}`;
      if (isBreach(outcome) || outcome.kind === "refused") {
        breaches.push(`${call}: ${outcome.text}`);
        continue;
      }
      if (outcome.kind === "ok" && "command" in outcome.reply && !v.safeParse(CommandResultSchema, outcome.reply.command).success) {
        breaches.push(`${call} returned ${quote(JSON.stringify(outcome.reply.command))}, not {"message": string or null, "status": "reported", "changed" or "refused"}`);
        continue;
      }
      answered++;
    }
  }
  if (breaches.length) {
    return fail(breaches.join("; "), exported
      ? "answer each command with NULL or a fresh {\"message\": ..., \"status\": \"reported\" | \"changed\" | \"refused\"}, and never crash"
      : "export cxagent_plugin_command to serve the commands the manifest declares, or remove them from it");
  }
  return pass(`${plural(declared.length, "declared command")}: ${answered} runs answered NULL or a valid {message, status}`);
}

export async function checkPoll(ctx: CheckContext): Promise<Verdict> {
  const exports = await exportsOf(ctx);
  if (typeof exports === "string") return skip(exports);
  const client = ctx.sidecar?.client === true;
  if (!exports.includes("poll")) return pass("not exported, and client is false: the plugin never originates work");
  await ctx.pollWindow();
  const problems: string[] = [];
  for (const submit of ctx.seen.submits) {
    const shown = quote(JSON.stringify(submit.wantResult === undefined ? { goal: submit.goal } : submit));
    if (!client) problems.push(`it submitted ${shown} although its manifest does not say client: true, so the host refuses it`);
    else if (typeof submit.goal !== "string" || submit.goal.trim() === "") problems.push(`it submitted ${shown}, whose "goal" is not a non-empty string`);
    else if (submit.wantResult !== undefined && submit.wantResult !== false) problems.push(`it submitted ${shown}: "wantResult" must be false or left out`);
  }
  for (const log of ctx.seen.logs) if (log.text.startsWith("cxagent_plugin_poll returned")) problems.push(log.text);
  if (problems.length) {
    return fail([...new Set(problems)].slice(0, 5).join("; "), "return NULL from poll when there is nothing to submit (not an empty object), and {\"goal\": \"...\"} when there is; declare \"client\": true to submit at all");
  }
  const submitted = ctx.seen.submits.length;
  if (!client) return warn("it exports cxagent_plugin_poll but its manifest says client: false: it is polled, and anything it submits is refused", "declare \"client\": true if the plugin originates work, or remove the export");
  return pass(`polled every ${ctx.pollMs} ms while the check ran: ${submitted ? `${plural(submitted, "valid submit")}` : "it answered NULL each time (nothing to submit)"}`);
}

const MISUSE_WORDS: Record<string, string> = {
  "outside-call": "outside any call (with a NULL call id where there is no current call), so the host drops it",
  "after-return": "for a call that had already returned, so the host drops it",
  "after-stop": "after cxagent_plugin_stop returned, when the table is no longer valid",
  "out-of-range": "with a percent or level out of range, which the host clamps",
  "bad-call-id": "with a call id that is not one current_call() returned",
};

export async function checkHostTable(ctx: CheckContext): Promise<Verdict> {
  const exports = await exportsOf(ctx);
  if (typeof exports === "string") return skip(exports);
  if (!exports.includes("attach")) return pass("attach is not exported: its calls report nothing until they return");
  if (ctx.seen.misuse.length === 0) return pass("every progress, log and stream report named a running call, and nothing used the table after stop");
  const grouped = new Map<string, number>();
  for (const e of ctx.seen.misuse) {
    const where = e.from === "thread" ? "a thread of its own" : `cxagent_plugin_${e.from}`;
    const key = `${e.function} from ${where} ${MISUSE_WORDS[e.misuse ?? ""] ?? e.misuse}`;
    grouped.set(key, (grouped.get(key) ?? 0) + 1);
  }
  const seen = [...grouped].map(([what, n]) => `${what}${n > 1 ? ` (${n} times)` : ""}`);
  const fatal = ctx.seen.misuse.some((e) => e.misuse !== "out-of-range");
  const fix = "report inside invoke and command (call id NULL), or from a thread of your own with an id copied from current_call() while the call runs; log from anywhere; stop your threads inside stop";
  return fatal ? fail(seen.join("; "), fix) : warn(seen.join("; "), "send percent 0..100 (or -1, busy) and levels 0..5");
}
