/**
 * What a plugin answered, as its caller gets it: an invoke's JobResult, a command's result, or the
 * error for an answer of ok:false or of the wrong shape.
 */
import * as v from "valibot";
import { CxError } from "../errors.ts";
import type { KindProfile } from "../kinds/index.ts";
import { describeValue, preview } from "../protocol/issues.ts";
import { type CommandResult, CommandResultSchema, type JobResult, toJobResult } from "../protocol/result.ts";
import type { Reply } from "../protocol/wire.ts";

/** An invoke's answer: its JobResult, or the error it is. */
export function invokeResult(plugin: string, profile: KindProfile, reply: Reply, tool: string, elapsed: number): JobResult {
  if (!reply.ok) throw replyError(plugin, profile, reply, `${tool} failed`, tool);
  if (reply.result === null || typeof reply.result !== "object" || Array.isArray(reply.result)) {
    throw new CxError("E_BAD_REPLY", `plugin '${plugin}': cxagent_plugin_invoke returned a result that is ${describeValue(reply.result)}, not a JobResult object`, {
      hint: "a result envelope is {\"ok\": true, \"result\": {\"success\": true, \"output\": {...}}}",
    });
  }
  return toJobResult(reply.result as Record<string, unknown>, elapsed);
}

/** A command's answer: its message and status, or the error it is. */
export function commandResult(plugin: string, profile: KindProfile, reply: Reply, name: string): CommandResult {
  if (!reply.ok) throw replyError(plugin, profile, reply, `command '${name}' failed`, name);
  if (!("command" in reply)) return { message: null, status: "reported" };
  const parsed = v.safeParse(CommandResultSchema, reply.command);
  if (!parsed.success) {
    const { command } = profile;
    throw new CxError("E_BAD_REPLY", `plugin '${plugin}': ${command.export} returned ${preview(JSON.stringify(reply.command))}, not {"message": string or null, "status": "reported", "changed" or "refused"}`, {
      hint: command.hint,
    });
  }
  return parsed.output;
}

/**
 * The error for a call the plugin answered with ok:false. Its own message often starts with the
 * tool's name already ("calc_multiply: missing b"): then it is not said twice.
 */
export function replyError(plugin: string, profile: KindProfile, reply: Extract<Reply, { ok: false }>, what: string, subject: string): CxError {
  switch (reply.fault) {
    case "bad-reply":
      return new CxError("E_BAD_REPLY", `plugin '${plugin}': ${reply.error}`, {
        hint: profile.badReplyHint,
      });
    case "missing-export":
      return new CxError("E_LOAD", `plugin '${plugin}': ${reply.error}`);
    case undefined:
      return new CxError("E_PLUGIN_FAILED", `plugin '${plugin}': ${saysWho(reply.error, subject) ? "" : `${what}: `}${reply.error}`);
    default:
      return new CxError("E_INTERNAL", `plugin '${plugin}': ${reply.error}`);
  }
}

/** Whether a plugin's message already starts by naming `subject` ("calc_add: …", "calc_add failed"). */
function saysWho(message: string, subject: string): boolean {
  return message.startsWith(subject) && /^[\s:,(]/.test(message.slice(subject.length));
}
