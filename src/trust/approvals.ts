/**
 * approvals.json in the state folder: which exact load set a person approved for a plugin at a
 * folder (SPEC §6.3). Same-named plugins in two folders are two approvals. Only a person answering
 * the prompt, or `cxagent approve --hash` with the matching hash, adds an entry; nothing in
 * config.json can. Every change is made under the file's lock, so concurrent writers lose nothing.
 */
import { realpathSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { isPlainObject } from "../discovery/config.ts";
import { readJsonStrict, updateJsonLocked } from "../files.ts";
import type { LoadSetFile } from "./hash.ts";

const HEX64 = /^[0-9a-f]{64}$/;
const Hex64 = v.pipe(v.string(), v.regex(HEX64, "must be 64 lowercase hex digits"));

export const ApprovedFileSchema = v.strictObject({
  path: v.string(),
  size: v.pipe(v.number(), v.integer(), v.minValue(0)),
  sha256: Hex64,
});

export const ApprovalSchema = v.strictObject({
  plugin: v.string(),
  hash: Hex64,
  /** The folder's real path (approvals written before file lists were kept may hold another spelling). */
  directory: v.string(),
  approvedAt: v.string(),
  /** Absent in approvals written by cxagent 0.1, which kept no file list. */
  files: v.optional(v.array(ApprovedFileSchema)),
});
export type Approval = v.InferOutput<typeof ApprovalSchema>;

const ApprovalsFileSchema = v.strictObject({ approvals: v.array(ApprovalSchema) });
type ApprovalsFile = v.InferOutput<typeof ApprovalsFileSchema>;
const EMPTY: ApprovalsFile = { approvals: [] };

/** What changed in a plugin's folder since its approval. */
export interface Changes {
  added: string[];
  removed: string[];
  modified: string[];
}

export type Trust =
  | { state: "approved"; approval: Approval }
  /** `changes` is null when the earlier approval kept no file list. */
  | { state: "changed"; approval: Approval; changes: Changes | null }
  | { state: "new" };

export type TrustState = Trust["state"];

export function approvalsPath(stateDir: string): string {
  return join(stateDir, "approvals.json");
}

export function readApprovals(stateDir: string): Approval[] {
  return readJsonStrict(approvalsPath(stateDir), ApprovalsFileSchema, EMPTY, "approvals file").approvals;
}

/** An entry of the file read only as far as its plugin's name (see readApprovalsOf). */
const OtherApprovalSchema = v.looseObject({ plugin: v.string() });

/**
 * The approvals of the plugin named `plugin`, each checked in full, as readApprovals checks every
 * one; the file's other entries are read only as far as their plugin's name, which is all a load
 * of this plugin looks at. (Checked in full, the 39 approvals of the bench's state folder cost a
 * one-shot invoke about 1 ms: 30 paired runs, wall ratio 1.05 median against one approval.) A
 * corrupt entry of another plugin does not stop this one's load; approving or revoking any plugin,
 * which rewrites the file, checks every entry and refuses a corrupt one.
 */
export function readApprovalsOf(stateDir: string, plugin: string): Approval[] {
  const schema = v.strictObject({
    approvals: v.array(v.lazy((entry) => (typeof entry === "object" && entry !== null && (entry as { plugin?: unknown }).plugin === plugin ? ApprovalSchema : OtherApprovalSchema))),
  });
  const plainly = (file: unknown) => hasOnly(file, ["approvals"]) && Array.isArray(file.approvals) && file.approvals.every((e) => isPlainObject(e) && typeof e.plugin === "string" && (e.plugin !== plugin || isPlainApproval(e)));
  return readJsonStrict(approvalsPath(stateDir), schema, EMPTY, "approvals file", plainly).approvals.filter((a): a is Approval => a.plugin === plugin);
}

/*
 * ApprovalSchema's check written out, for readApprovalsOf's quick path: the first use of valibot's
 * schemas cost a one-shot invoke 1.1-1.9 ms in a fresh process, against 0.1 ms to read and parse
 * the file. It accepts only what the schema accepts (test/unit/approvals-plain.test.ts holds it
 * to that); whatever it refuses goes to the schema, which names the problem.
 */

/** A plain object whose own keys are all among `allowed` (strictObject's test). */
const hasOnly = (value: unknown, allowed: readonly string[]): value is Record<string, unknown> => isPlainObject(value) && Object.keys(value).every((k) => allowed.includes(k));

const APPROVAL_KEYS = ["plugin", "hash", "directory", "approvedAt", "files"];
const FILE_KEYS = ["path", "size", "sha256"];

function isPlainApproval(e: Record<string, unknown>): boolean {
  if (!hasOnly(e, APPROVAL_KEYS) || typeof e.plugin !== "string" || typeof e.hash !== "string" || !HEX64.test(e.hash)) return false;
  if (typeof e.directory !== "string" || typeof e.approvedAt !== "string") return false;
  if (!("files" in e)) return true;
  return Array.isArray(e.files) && e.files.every((f) => hasOnly(f, FILE_KEYS) && typeof f.path === "string" && Number.isInteger(f.size) && (f.size as number) >= 0 && typeof f.sha256 === "string" && HEX64.test(f.sha256));
}

/** For the test that holds the quick check to the schema. */
export const plainApprovalForTest = (e: unknown) => isPlainObject(e) && isPlainApproval(e);

/** Whether an approval is for the folder whose real path is `realFolder`. */
export function isForFolder(approval: Approval, realFolder: string): boolean {
  if (approval.directory === realFolder) return true;
  try {
    return realpathSync(approval.directory) === realFolder; // an older approval's spelling of the folder
  } catch {
    return false;
  }
}

/**
 * approved: this exact hash at this folder; changed: approved at this folder before, with other
 * bytes; new: never approved at this folder (a same-named plugin elsewhere does not count).
 */
export function trustOf(approvals: readonly Approval[], plugin: string, realFolder: string, hash: string, files: readonly LoadSetFile[]): Trust {
  const here = approvals.filter((a) => a.plugin === plugin && isForFolder(a, realFolder));
  const exact = here.find((a) => a.hash === hash);
  if (exact) return { state: "approved", approval: exact };
  const last = here.at(-1);
  if (!last) return { state: "new" };
  return { state: "changed", approval: last, changes: last.files ? diffFiles(last.files, files) : null };
}

/** Folders (as recorded) where a plugin of this name is approved, other than `realFolder`. */
export function approvedElsewhere(approvals: readonly Approval[], plugin: string, realFolder: string): string[] {
  const folders = approvals.filter((a) => a.plugin === plugin && !isForFolder(a, realFolder)).map((a) => a.directory);
  return [...new Set(folders)];
}

export function diffFiles(before: readonly LoadSetFile[], after: readonly LoadSetFile[]): Changes {
  const old = new Map(before.map((f) => [f.path, f]));
  const now = new Map(after.map((f) => [f.path, f]));
  return {
    added: after.filter((f) => !old.has(f.path)).map((f) => f.path),
    removed: before.filter((f) => !now.has(f.path)).map((f) => f.path),
    modified: after.filter((f) => {
      const was = old.get(f.path);
      return was !== undefined && (was.sha256 !== f.sha256 || was.size !== f.size);
    }).map((f) => f.path),
  };
}

/** Records an approval of a plugin at a folder, replacing earlier ones for that plugin at that folder only. */
export function recordApproval(stateDir: string, entry: { plugin: string; hash: string; realFolder: string; files: readonly LoadSetFile[] }): Approval {
  const approval: Approval = {
    plugin: entry.plugin,
    hash: entry.hash,
    directory: entry.realFolder,
    approvedAt: new Date().toISOString(),
    files: entry.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
  };
  updateJsonLocked(approvalsPath(stateDir), ApprovalsFileSchema, EMPTY, "approvals file", (file) => ({
    approvals: [...file.approvals.filter((a) => !(a.plugin === entry.plugin && isForFolder(a, entry.realFolder))), approval],
  }));
  return approval;
}

/**
 * Removes approvals of a plugin: at one folder, or at every folder when `realFolder` is null.
 * Returns the folders (as recorded) whose approval was removed.
 */
export function revokeApproval(stateDir: string, plugin: string, realFolder: string | null): string[] {
  const removed: string[] = [];
  updateJsonLocked(approvalsPath(stateDir), ApprovalsFileSchema, EMPTY, "approvals file", (file) => {
    const kept = file.approvals.filter((a) => {
      const goes = a.plugin === plugin && (realFolder === null || isForFolder(a, realFolder));
      if (goes) removed.push(a.directory);
      return !goes;
    });
    return kept.length === file.approvals.length ? null : { approvals: kept };
  });
  return removed;
}
