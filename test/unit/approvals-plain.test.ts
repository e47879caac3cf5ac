/**
 * readApprovalsOf's quick check of an approval (trust/approvals.ts) accepts only what the schema,
 * ApprovalSchema, accepts: it is held to that on a valid approval and on every way of spoiling
 * one. Whatever it refuses goes on to the schema, so it may refuse more, never less. And a file
 * whose entry for the plugin is spoiled is still refused, naming the problem.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { ApprovalSchema, plainApprovalForTest, readApprovalsOf } from "../../src/trust/approvals.ts";
import { tempDir } from "../helpers.ts";

const HASH = "a".repeat(64);
const valid = {
  plugin: "echo",
  hash: HASH,
  directory: "/plugins/echo",
  approvedAt: "2026-12-05T00:00:00.000Z",
  files: [{ path: "echo.so", size: 16384, sha256: "b".repeat(64) }],
};

type Entry = Record<string, unknown>;
const file = (f: Entry): Entry => ({ ...valid, files: [f] });
const spoiled: [string, unknown][] = [
  ["an array", [valid]],
  ["null", null],
  ["a string", "echo"],
  ["an extra key", { ...valid, extra: 1 }],
  ["__proto__ as a key", JSON.parse(`{"__proto__": {"x": 1}, ${JSON.stringify(valid).slice(1)}`)],
  ["no plugin", { ...valid, plugin: undefined }],
  ["a plugin that is a number", { ...valid, plugin: 7 }],
  ["a hash of capitals", { ...valid, hash: "A".repeat(64) }],
  ["a short hash", { ...valid, hash: "a".repeat(63) }],
  ["a hash with a newline after it", { ...valid, hash: `${HASH}\n` }],
  ["a hash with a character before it", { ...valid, hash: `x${HASH}` }],
  ["no directory", Object.fromEntries(Object.entries(valid).filter(([k]) => k !== "directory"))],
  ["no approvedAt", Object.fromEntries(Object.entries(valid).filter(([k]) => k !== "approvedAt"))],
  ["approvedAt as a number", { ...valid, approvedAt: 0 }],
  ["files as null", { ...valid, files: null }],
  ["files as an object", { ...valid, files: { 0: valid.files[0] } }],
  ["a file that is null", { ...valid, files: [null] }],
  ["a file with an extra key", file({ ...valid.files[0], mode: 420 })],
  ["a file without a size", file({ path: "echo.so", sha256: "b".repeat(64) })],
  ["a negative size", file({ ...valid.files[0], size: -1 })],
  ["a fractional size", file({ ...valid.files[0], size: 1.5 })],
  ["a size as a string", file({ ...valid.files[0], size: "16384" })],
  ["a file path that is a number", file({ ...valid.files[0], path: 1 })],
  ["a file hash of capitals", file({ ...valid.files[0], sha256: "B".repeat(64) })],
];

test("the quick check accepts a valid approval, with or without its file list", () => {
  const { files: _files, ...withoutFiles } = valid;
  for (const entry of [valid, withoutFiles, { ...valid, files: [] }, file({ ...valid.files[0], size: 0 })]) {
    expect(v.is(ApprovalSchema, entry)).toBe(true);
    expect(plainApprovalForTest(entry)).toBe(true);
  }
});

test.each(spoiled)("the quick check accepts nothing the schema refuses: %s", (_what, entry) => {
  expect(v.is(ApprovalSchema, entry)).toBe(false);
  expect(plainApprovalForTest(entry)).toBe(false);
});

test("a spoiled approval of the plugin being loaded is still refused by the schema, naming the problem", () => {
  using dir = tempDir();
  const path = join(dir.path, "approvals.json");
  writeFileSync(path, JSON.stringify({ approvals: [{ plugin: "other", anything: true }, { ...valid, hash: "A".repeat(64) }] }));
  expect(() => readApprovalsOf(dir.path, "echo")).toThrow(`the approvals file ${path} is corrupt`);
  expect(() => readApprovalsOf(dir.path, "echo")).toThrow("hash");
  // for a third plugin, the other entries are read only as far as their names, quick check or not
  expect(readApprovalsOf(dir.path, "third")).toEqual([]);
  writeFileSync(path, JSON.stringify({ approvals: [{ plugin: "other", anything: true }, valid] }));
  expect(readApprovalsOf(dir.path, "echo")).toEqual([valid]);
});
