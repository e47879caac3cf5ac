/**
 * Approving a served plugin's changed files from the MCP client (issue 42 point 3): when a plugin's
 * files change on disk, its tools leave the list; a client that can show an elicitation form, and
 * that cxagent knows is the user's own (stdio, or HTTP with the bearer token), is asked whether to
 * approve the new files. Yes approves exactly the files it was shown (their hash, pinned: files that
 * changed again meanwhile are refused); anything else leaves them unapproved, as `cxagent approve`
 * in another terminal still can. A client without a token is never asked: any local user could be
 * behind it.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { ElicitRequestFormParams } from "@modelcontextprotocol/sdk/types.js";
import type { PendingApproval } from "./lazy.ts";

/** How long a person may take to answer. */
const ASK_MS = 10 * 60_000;
/** How many changed file names the question lists. */
const LISTED = 10;

/** `text` with control characters and bidirectional overrides made visible: it names files anyone may have named. */
export function plain(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
}

export function approvalQuestion(pending: PendingApproval): ElicitRequestFormParams {
  const { added = [], removed = [], modified = [] } = pending.changes ?? {};
  const named = [...modified.map((f) => `changed ${f}`), ...added.map((f) => `added ${f}`), ...removed.map((f) => `removed ${f}`)];
  const list = named.length === 0 ? "" : `\n${named.slice(0, LISTED).map((line) => `  ${plain(line)}`).join("\n")}${named.length > LISTED ? `\n  and ${named.length - LISTED} more` : ""}`;
  return {
    mode: "form",
    message:
      `The files of plugin '${pending.plugin}' in ${plain(pending.folder)} changed on disk, so its tools were taken off the list.${list}\n` +
      `Approve the new files (hash ${pending.hash})? Review them first: approving lets their code run.`,
    requestedSchema: {
      type: "object",
      properties: { approve: { type: "boolean", title: `Approve the new files of ${pending.plugin}`, default: false } },
      required: ["approve"],
    },
  };
}

/** Asks `server`'s client; true only for an accepted form whose answer is yes. */
export async function askToApprove(server: Pick<Server, "elicitInput">, pending: PendingApproval): Promise<boolean> {
  const answer = await server.elicitInput(approvalQuestion(pending), { timeout: ASK_MS });
  return answer.action === "accept" && answer.content?.approve === true;
}
