/**
 * The calls under the declared sandbox (issue 39 point 5): every check host of a plugin with a
 * sandbox starts through the launcher, as a session's does; this check starts one more, attaches
 * a tracer to it, makes each tool's calls (its schema's examples first, as `results` does) and
 * names each access the sandbox denied with the sidecar line that would allow it (denials.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { landlockAudit } from "../../sandbox/audit.ts";
import { probeKernel } from "../../sandbox/plan.ts";
import { showArgs } from "../answers.ts";
import { callArguments } from "../arguments.ts";
import type { CheckContext } from "../context.ts";
import { attachTracer, denialsOf, denialWords } from "../denials.ts";
import { type Answer, CheckHost } from "../host.ts";
import { fail, pass, plural, skip, type Verdict, warn } from "../report.ts";

const DENIED_TEXT = /EACCES|EPERM|Permission denied|Operation not permitted/;

export async function checkSandbox(ctx: CheckContext): Promise<Verdict> {
  const effective = ctx.inspection?.sandbox.effective ?? null;
  if (effective === null) return pass("the plugin declares no sandbox (and config.json imposes none): it runs unconfined, so nothing is denied to it");
  if (ctx.runnable !== null) return skip(ctx.runnable);
  if (ctx.inspection?.profile.sandboxesCalls) return skip("its sandbox confines each call's own process, started through the launcher by its host, which this check does not trace");
  const host = await ctx.open();
  if (!(host instanceof CheckHost)) return skip(`its plugin host did not start under its sandbox: ${host.message.split("\n")[0]}`);
  const start = await host.start({}, ctx.scratch, ctx.timeouts.startMs);
  if (start.kind !== "reply" || !start.reply.ok) {
    await host.close(false);
    return skip("its start failed with empty settings under its sandbox (see start)");
  }
  const audit = landlockAudit(probeKernel().landlockAbi);
  const folder = mkdtempSync(join(tmpdir(), "cxagent-check-trace-"));
  const traceFile = join(folder, "trace");
  try {
    const tracer = await attachTracer(host.pid!, traceFile);
    const calls: { call: string; answer: Answer }[] = [];
    for (const tool of ctx.tools) {
      for (const { args } of callArguments(tool.inputSchema, 3)) {
        if (ctx.hung.has(tool.name)) break;
        calls.push({ call: `${tool.name} ${showArgs(args)}`, answer: await host.request({ kind: "invoke", tool: tool.name, arguments: args }, ctx.timeouts.callMs) });
      }
    }
    await host.close(true, ctx.timeouts.stopMs);
    await tracer?.detach();
    if (tracer) {
      const denials = denialsOf(readTrace(traceFile), { project: ctx.scratch, cwd: ctx.scratch });
      const how = `traced by errno (strace), since Landlock's audit is off: ${audit.on ? "cxagent does not read it yet" : audit.why}`;
      if (denials.length === 0) return pass(`${plural(calls.length, "call")} ran under the sandbox and were denied nothing (${how})`);
      return fail(`under the sandbox, ${plural(calls.length, "call")} met ${plural(denials.length, "denied access", "denied accesses")}: ${denials.map(denialWords).join("; ")} (${how})`,
        "declare what the tools need in the sidecar's \"sandbox\" (each line above), or have the tools not touch it; the plugin meets EACCES or EPERM there");
    }
    const met = calls.filter((c) => DENIED_TEXT.test(JSON.stringify(c.answer.kind === "reply" ? c.answer.reply : c.answer.error.message)));
    const why = `no tracer (strace) is installed and Landlock's audit is off (${audit.on ? "cxagent does not read it yet" : audit.why})`;
    if (met.length === 0) return pass(`${plural(calls.length, "call")} ran under the sandbox and none answered EACCES or EPERM (which accesses were denied cannot be named here: ${why})`);
    return warn(`${plural(met.length, "call")} under the sandbox answered EACCES or EPERM: ${met.map((c) => c.call).join("; ")}; which accesses were denied cannot be named here: ${why}`,
      "install strace and run cxagent check again to have each denied access named with the sidecar line that would allow it");
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function readTrace(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
