/**
 * approvals.json in the state folder: which exact load set a person approved for a plugin name.
 * Only a person answering the prompt, or `cxagent approve --hash` with the matching hash, adds an
 * entry; nothing in config.json can.
 */
import { join } from "node:path";
import * as v from "valibot";
import { readJsonStrict, writeJsonAtomic } from "../files.ts";

export const ApprovalSchema = v.strictObject({
  plugin: v.string(),
  hash: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits")),
  directory: v.string(),
  approvedAt: v.string(),
});
export type Approval = v.InferOutput<typeof ApprovalSchema>;

const ApprovalsFileSchema = v.strictObject({ approvals: v.array(ApprovalSchema) });

export type TrustState = "approved" | "changed" | "new";

export function approvalsPath(stateDir: string): string {
  return join(stateDir, "approvals.json");
}

export function readApprovals(stateDir: string): Approval[] {
  return readJsonStrict(approvalsPath(stateDir), ApprovalsFileSchema, { approvals: [] }, "approvals file").approvals;
}

/** approved: this exact hash; changed: approved before, with other bytes; new: never approved. */
export function trustState(approvals: readonly Approval[], plugin: string, hash: string): TrustState {
  const mine = approvals.filter((a) => a.plugin === plugin);
  if (mine.some((a) => a.hash === hash)) return "approved";
  return mine.length ? "changed" : "new";
}

/** Records an approval, replacing earlier ones for the same plugin name. */
export function recordApproval(stateDir: string, plugin: string, hash: string, directory: string): Approval {
  const approvals = readApprovals(stateDir).filter((a) => a.plugin !== plugin);
  const entry = { plugin, hash, directory, approvedAt: new Date().toISOString() };
  writeJsonAtomic(approvalsPath(stateDir), { approvals: [...approvals, entry] });
  return entry;
}

/** Removes every approval of a plugin; returns how many there were. */
export function revokeApproval(stateDir: string, plugin: string): number {
  const approvals = readApprovals(stateDir);
  const kept = approvals.filter((a) => a.plugin !== plugin);
  if (kept.length !== approvals.length) writeJsonAtomic(approvalsPath(stateDir), { approvals: kept });
  return approvals.length - kept.length;
}
