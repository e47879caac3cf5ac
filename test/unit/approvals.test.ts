/**
 * approvals.json's functions (trust/approvals.ts), on a real state folder: what counts as approved,
 * changed or new; what changed, file by file; which folders elsewhere; what recording and revoking
 * keep and remove; and a spoiled file refused, naming it. Quick enough to run against every mutant
 * of the file (npm run mutants), where the CLI tests cost seconds each.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import {
  type Approval,
  approvalsPath,
  approvedElsewhere,
  diffFiles,
  isForFolder,
  readApprovals,
  readApprovalsOf,
  recordApproval,
  revokeApproval,
  trustOf,
} from "../../src/trust/approvals.ts";
import { tempDir } from "../helpers.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);
const C = "c".repeat(64);
const f = (path: string, size: number, sha256: string) => ({ path, size, sha256 });
const approval = (plugin: string, directory: string, hash: string, files?: Approval["files"]): Approval => ({ plugin, hash, directory, approvedAt: "2026-12-06T00:00:00.000Z", ...(files ? { files } : {}) });

describe("diffFiles", () => {
  test("added, removed and modified, each in its list's order; a file unchanged is in none", () => {
    const before = [f("same", 1, A), f("gone", 1, A), f("edited", 1, A), f("also-gone", 2, B)];
    const after = [f("new", 1, A), f("edited", 1, B), f("same", 1, A), f("another", 3, C)];
    expect(diffFiles(before, after)).toEqual({ added: ["new", "another"], removed: ["gone", "also-gone"], modified: ["edited"] });
  });

  test("a file whose hash changed at the same size is modified; so is one whose size alone differs", () => {
    expect(diffFiles([f("x", 5, A)], [f("x", 5, B)]).modified).toEqual(["x"]);
    expect(diffFiles([f("x", 5, A)], [f("x", 6, A)]).modified).toEqual(["x"]);
    expect(diffFiles([f("x", 5, A)], [f("x", 5, A)])).toEqual({ added: [], removed: [], modified: [] });
  });
});

describe("trustOf and approvedElsewhere", () => {
  test("approved: this hash at this folder; changed: another hash here, with what changed; new: never here", () => {
    using dir = tempDir();
    const here = join(dir.path, "here");
    const there = join(dir.path, "there");
    mkdirSync(here);
    mkdirSync(there);
    const files = [f("echo.so", 4, B)];
    const approvals = [approval("echo", there, C), approval("other", here, B), approval("echo", here, A, [f("echo.so", 4, A)])];
    expect(trustOf(approvals, "echo", here, A, files)).toEqual({ state: "approved", approval: approvals[2]! });
    expect(trustOf(approvals, "echo", here, B, files)).toEqual({ state: "changed", approval: approvals[2]!, changes: { added: [], removed: [], modified: ["echo.so"] } });
    // a same-named plugin's approval elsewhere, and another plugin's here, do not count
    expect(trustOf(approvals, "echo", join(dir.path, "third"), C, files)).toEqual({ state: "new" });
    expect(trustOf(approvals, "other", here, C, files)).toEqual({ state: "changed", approval: approvals[1]!, changes: null });
    expect(trustOf([], "echo", here, A, files)).toEqual({ state: "new" });
  });

  test("changed names the latest approval here; an exact one anywhere in the list is approved", () => {
    const older = approval("echo", "/p", A, [f("a", 1, A)]);
    const newer = approval("echo", "/p", B, [f("b", 1, B)]);
    expect(trustOf([older, newer], "echo", "/p", C, [])).toEqual({ state: "changed", approval: newer, changes: { added: [], removed: ["b"], modified: [] } });
    expect(trustOf([older, newer], "echo", "/p", A, []).state).toBe("approved");
  });

  test("an approval recorded under another spelling of the folder (a link to it) is for it; one whose folder is gone is not", () => {
    using dir = tempDir();
    const real = join(dir.path, "real");
    mkdirSync(real);
    symlinkSync(real, join(dir.path, "link"));
    expect(isForFolder(approval("echo", real, A), real)).toBe(true);
    expect(isForFolder(approval("echo", join(dir.path, "link"), A), real)).toBe(true);
    expect(isForFolder(approval("echo", join(dir.path, "gone"), A), real)).toBe(false);
    expect(isForFolder(approval("echo", join(dir.path, "gone"), A), join(dir.path, "gone"))).toBe(true);
  });

  test("approvedElsewhere: each other folder of this plugin once, in order; not this folder, not another plugin's", () => {
    const approvals = [approval("echo", "/one", A), approval("echo", "/here", A), approval("other", "/three", A), approval("echo", "/two", B), approval("echo", "/one", C)];
    expect(approvedElsewhere(approvals, "echo", "/here")).toEqual(["/one", "/two"]);
    expect(approvedElsewhere(approvals, "none", "/here")).toEqual([]);
  });
});

describe("recordApproval and revokeApproval", () => {
  test("recording replaces this plugin's approval at this folder only, keeping the file list's three fields", () => {
    using dir = tempDir();
    recordApproval(dir.path, { plugin: "echo", hash: A, realFolder: "/one", files: [] });
    recordApproval(dir.path, { plugin: "echo", hash: A, realFolder: "/two", files: [] });
    recordApproval(dir.path, { plugin: "other", hash: A, realFolder: "/one", files: [] });
    const extra = { ...f("echo.so", 4, B), mode: 0o644 } as ReturnType<typeof f>;
    const made = recordApproval(dir.path, { plugin: "echo", hash: B, realFolder: "/one", files: [extra] });
    expect(made).toEqual({ plugin: "echo", hash: B, directory: "/one", approvedAt: made.approvedAt, files: [f("echo.so", 4, B)] });
    expect(new Date(made.approvedAt).toISOString()).toBe(made.approvedAt);
    expect(Math.abs(Date.parse(made.approvedAt) - Date.now())).toBeLessThan(60_000);
    const stored = readApprovals(dir.path);
    expect(stored.map((a) => [a.plugin, a.directory, a.hash])).toEqual([
      ["echo", "/two", A],
      ["other", "/one", A],
      ["echo", "/one", B],
    ]);
    expect(stored[2]).toEqual(made);
    expect(readApprovalsOf(dir.path, "echo")).toEqual([stored[0]!, made]);
  });

  test("revoking at one folder, then at every folder, names the folders removed; nothing to remove leaves the file as it was", () => {
    using dir = tempDir();
    expect(revokeApproval(dir.path, "echo", null)).toEqual([]);
    for (const [plugin, realFolder] of [["echo", "/one"], ["echo", "/two"], ["other", "/one"], ["echo", "/three"]] as const) {
      recordApproval(dir.path, { plugin, hash: A, realFolder, files: [] });
    }
    expect(revokeApproval(dir.path, "echo", "/two")).toEqual(["/two"]);
    expect(readApprovals(dir.path).map((a) => `${a.plugin}@${a.directory}`)).toEqual(["echo@/one", "other@/one", "echo@/three"]);
    const before = readFileSync(approvalsPath(dir.path), "utf8");
    const inode = statSync(approvalsPath(dir.path)).ino;
    // not rewritten (checked after each: a rewrite's temp file could be given the freed inode back)
    expect(revokeApproval(dir.path, "echo", "/two")).toEqual([]);
    expect(statSync(approvalsPath(dir.path)).ino).toBe(inode);
    expect(revokeApproval(dir.path, "none", null)).toEqual([]);
    expect(statSync(approvalsPath(dir.path)).ino).toBe(inode);
    expect(readFileSync(approvalsPath(dir.path), "utf8")).toBe(before);
    expect(revokeApproval(dir.path, "echo", null)).toEqual(["/one", "/three"]);
    expect(readApprovals(dir.path).map((a) => `${a.plugin}@${a.directory}`)).toEqual(["other@/one"]);
  });
});

describe("reading approvals.json", () => {
  const valid = approval("echo", "/p", A, [f("echo.so", 4, B)]);
  const corrupt = (dir: string, content: unknown) => {
    writeFileSync(approvalsPath(dir), JSON.stringify(content));
    for (const read of [() => readApprovalsOf(dir, "echo"), () => readApprovals(dir)]) {
      let error: unknown;
      try {
        read();
      } catch (e) {
        error = e;
      }
      expect(isCxError(error, "E_STATE")).toBe(true);
      expect((error as Error).message).toStartWith(`the approvals file ${approvalsPath(dir)} is corrupt`);
    }
  };

  test("no file: no approvals; another plugin's entries are left out", () => {
    using dir = tempDir();
    expect(readApprovals(dir.path)).toEqual([]);
    expect(readApprovalsOf(dir.path, "echo")).toEqual([]);
    writeFileSync(approvalsPath(dir.path), JSON.stringify({ approvals: [approval("other", "/p", A), valid] }));
    expect(readApprovalsOf(dir.path, "echo")).toEqual([valid]);
  });

  test("a file with another key beside approvals, approvals that is not a list, an entry that is null or has no plugin: corrupt, named", () => {
    using dir = tempDir();
    corrupt(dir.path, { approvals: [valid], extra: 1 });
    corrupt(dir.path, { approvals: { 0: valid } });
    corrupt(dir.path, { approvals: [null, valid] });
    corrupt(dir.path, { approvals: [{ hash: A }, valid] });
    corrupt(dir.path, { approvals: [{ plugin: 7 }, valid] });
    corrupt(dir.path, { approvals: [{ plugin: 7 }] });
  });

  test("a spoiled entry of this plugin is named; another plugin's entry is not checked past its name", () => {
    using dir = tempDir();
    writeFileSync(approvalsPath(dir.path), JSON.stringify({ approvals: [{ plugin: "other", anything: true }, { ...valid, hash: "x" }] }));
    let message = "";
    try {
      readApprovalsOf(dir.path, "echo");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("hash");
    expect(message).not.toContain("anything");
    expect(message).not.toContain("directory");
  });

  test("recording or revoking over a corrupt file refuses, naming it as the approvals file", () => {
    using dir = tempDir();
    writeFileSync(approvalsPath(dir.path), "{");
    const prefix = `the approvals file ${approvalsPath(dir.path)} is corrupt`;
    expect(() => recordApproval(dir.path, { plugin: "echo", hash: A, realFolder: "/p", files: [] })).toThrow(prefix);
    expect(() => revokeApproval(dir.path, "echo", null)).toThrow(prefix);
    expect(readFileSync(approvalsPath(dir.path), "utf8")).toBe("{");
  });

  test("a hash that is not 64 lowercase hex digits is named so", () => {
    using dir = tempDir();
    writeFileSync(approvalsPath(dir.path), JSON.stringify({ approvals: [{ ...valid, hash: "A".repeat(64) }] }));
    expect(() => readApprovals(dir.path)).toThrow("must be 64 lowercase hex digits");
    expect(() => readApprovalsOf(dir.path, "echo")).toThrow("must be 64 lowercase hex digits");
  });
});
