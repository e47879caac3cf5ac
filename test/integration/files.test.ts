/**
 * src/files.ts on a real file system, case by case: where temporary files go, what an atomic
 * write leaves (and what a failed one does not), how a JSON file is read strictly, and how a small
 * file is read without waiting on a FIFO or reading past its cap.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { isCxError } from "../../src/errors.ts";
import { readJsonStrict, readSmallFile, tempFolder, updateJsonLocked, writeJsonAtomic } from "../../src/files.ts";
import { tempDir } from "../helpers.ts";

describe("tempFolder", () => {
  test("TMPDIR, else TMP, else TEMP, else /tmp; one trailing slash taken off, never the root's", () => {
    expect(tempFolder({ TMPDIR: "/a", TMP: "/b", TEMP: "/c" })).toBe("/a");
    expect(tempFolder({ TMP: "/b", TEMP: "/c" })).toBe("/b");
    expect(tempFolder({ TMPDIR: "", TMP: "/b", TEMP: "/c" })).toBe("/b");
    expect(tempFolder({ TEMP: "/c" })).toBe("/c");
    expect(tempFolder({ TMPDIR: "/a", TEMP: "/c" })).toBe("/a");
    expect(tempFolder({})).toBe("/tmp");
    expect(tempFolder({ TMPDIR: "/var/tmp/" })).toBe("/var/tmp");
    expect(tempFolder({ TMPDIR: "/" })).toBe("/");
    expect(tempFolder({ TMPDIR: "relative" })).toBe("relative");
    expect(tempFolder({ TMPDIR: "x/" })).toBe("x");
  });
});

describe("writeJsonAtomic", () => {
  test("two-space JSON and a final newline; only the file is left, no temp beside it", () => {
    using dir = tempDir();
    const path = join(dir.path, "a.json");
    writeJsonAtomic(path, { b: [1], c: "x" });
    expect(readFileSync(path, "utf8")).toBe('{\n  "b": [\n    1\n  ],\n  "c": "x"\n}\n');
    writeJsonAtomic(path, { again: true });
    expect(readdirSync(dir.path)).toEqual(["a.json"]);
  });

  test("a failed write names the file, says what to do, and leaves no temp file", () => {
    using dir = tempDir();
    const path = join(dir.path, "taken");
    mkdirSync(join(path, "inside"), { recursive: true }); // a non-empty folder: the rename fails
    let error: unknown;
    try {
      writeJsonAtomic(path, {});
    } catch (e) {
      error = e;
    }
    expect(isCxError(error, "E_STATE")).toBe(true);
    const e = error as { message: string; hint?: string; next?: unknown; cause?: unknown };
    expect(e.message).toStartWith(`cannot write ${path}: `);
    expect(e.hint).toBe(`check that ${dir.path} exists and is writable, or use another state folder`);
    expect(e.next).toEqual({ do: "choose-folder", which: "state", path: dir.path });
    expect(e.cause).toBeInstanceOf(Error);
    expect(readdirSync(dir.path)).toEqual(["taken"]);
    // its folder cannot be made (a file is in the way): no temp file was ever written, and the
    // error is still this one
    writeFileSync(join(dir.path, "file"), "");
    expect(() => writeJsonAtomic(join(dir.path, "file", "a.json"), {})).toThrow(`cannot write ${join(dir.path, "file", "a.json")}: `);
  });
});

describe("readJsonStrict", () => {
  const Schema = v.strictObject({ n: v.number() });

  test("a missing file is the fallback; a valid one its content; a plainly valid one as parsed", () => {
    using dir = tempDir();
    const path = join(dir.path, "f.json");
    const fallback = { n: 0 };
    expect(readJsonStrict(path, Schema, fallback, "test file")).toBe(fallback);
    writeFileSync(path, '{"n": 2}');
    expect(readJsonStrict(path, Schema, fallback, "test file")).toEqual({ n: 2 });
    // the quick check's answer is taken as it is: a value the schema would refuse shows it was used
    writeFileSync(path, '{"n": "not a number"}');
    expect(readJsonStrict(path, Schema, fallback, "test file", () => true)).toEqual({ n: "not a number" } as never);
    expect(() => readJsonStrict(path, Schema, fallback, "test file", () => false)).toThrow("is corrupt: it does not have the expected shape:\n");
  });

  test("a corrupt file is named, with why and what to do, and left as it was", () => {
    using dir = tempDir();
    const path = join(dir.path, "f.json");
    writeFileSync(path, '{"n": 1, "extra": true}');
    let error: unknown;
    try {
      readJsonStrict(path, Schema, { n: 0 }, "test file");
    } catch (e) {
      error = e;
    }
    expect(isCxError(error, "E_STATE")).toBe(true);
    const e = error as { message: string; hint?: string; details?: unknown };
    expect(e.message).toStartWith(`the test file ${path} is corrupt: it does not have the expected shape:\n  - `);
    expect(e.message).toContain("extra");
    expect(e.hint).toBe("it was left untouched for you to inspect; fix it by hand, or move it away to start from an empty one");
    expect(e.details).toEqual({ path });
    writeFileSync(path, "{");
    expect(() => readJsonStrict(path, Schema, { n: 0 }, "test file")).toThrow(`the test file ${path} is corrupt: it is not valid JSON (`);
    expect(readFileSync(path, "utf8")).toBe("{");
  });
});

describe("updateJsonLocked", () => {
  test("null from modify leaves the file as it is, not rewritten", () => {
    using dir = tempDir();
    const path = join(dir.path, "f.json");
    writeFileSync(path, '{"n":1}');
    const inode = statSync(path).ino;
    const Schema = v.strictObject({ n: v.number() });
    expect(updateJsonLocked(path, Schema, { n: 0 }, "test file", () => null)).toEqual({ n: 1 });
    expect(statSync(path).ino).toBe(inode);
    expect(readFileSync(path, "utf8")).toBe('{"n":1}');
    expect(updateJsonLocked(path, Schema, { n: 0 }, "test file", (c) => ({ n: c.n + 1 }))).toEqual({ n: 2 });
    expect(statSync(path).ino).not.toBe(inode);
  });
});

describe("readSmallFile", () => {
  test("the text of a file at or under the cap; one byte over is too large", () => {
    using dir = tempDir();
    const path = join(dir.path, "f");
    writeFileSync(path, "12345");
    expect(readSmallFile(path, 5)).toEqual({ text: "12345" });
    expect(readSmallFile(path, 6)).toEqual({ text: "12345" });
    expect(readSmallFile(path, 4)).toEqual({ tooLarge: true });
    expect(readSmallFile(path, 0)).toEqual({ tooLarge: true });
    writeFileSync(path, "");
    expect(readSmallFile(path, 0)).toEqual({ text: "" });
    expect(readSmallFile(path, 10)).toEqual({ text: "" });
  });

  test("a file far larger than the cap is too large without being read whole: a 1 TiB sparse file", () => {
    // The buffer is the cap plus one byte, not the file's size: a buffer of the size would be
    // refused (over 4 GiB) or fill the memory.
    using dir = tempDir();
    const path = join(dir.path, "sparse");
    writeFileSync(path, "");
    truncateSync(path, 2 ** 40);
    expect(readSmallFile(path, 10)).toEqual({ tooLarge: true });
  });

  test("missing, a path through a file, a folder, a FIFO (not waited on), and one that cannot be opened", () => {
    using dir = tempDir();
    expect(readSmallFile(join(dir.path, "absent"), 10)).toEqual({ missing: true });
    writeFileSync(join(dir.path, "file"), "x");
    expect(readSmallFile(join(dir.path, "file", "below"), 10)).toEqual({ missing: true });
    expect(readSmallFile(dir.path, 10)).toEqual({ notFile: true });
    expect(Bun.spawnSync(["mkfifo", join(dir.path, "fifo")]).exitCode).toBe(0);
    expect(readSmallFile(join(dir.path, "fifo"), 10)).toEqual({ notFile: true });
    symlinkSync("loop", join(dir.path, "loop"));
    const looped = readSmallFile(join(dir.path, "loop"), 10);
    expect("unreadable" in looped && looped.unreadable).toContain("ELOOP");
  });

  test("every descriptor it opens is closed", () => {
    using dir = tempDir();
    writeFileSync(join(dir.path, "f"), "x");
    const open = () => readdirSync("/proc/self/fd").length;
    const before = open();
    for (let i = 0; i < 20; i++) {
      readSmallFile(join(dir.path, "f"), 10);
      readSmallFile(dir.path, 10);
      readSmallFile(join(dir.path, "f"), 0);
    }
    expect(open()).toBeLessThanOrEqual(before); // (another test's descriptor may close meanwhile)
  });
});
