/** The result store's edges (issue 41): every refusal's words, offsets clamped, the writer's misuse, what scan calls foreign, eviction's order. */
import { expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { REF_PREFIX, RESULT_DEFAULTS, ResultStore } from "../../src/results/store.ts";
import { CxError } from "../../src/errors.ts";
import { tempDir } from "../helpers.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
function thrown(f: () => unknown): CxError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(CxError);
    return e as CxError;
  }
  throw new Error("it did not throw");
}

test("defaults: a 1 GiB cap, 7 days unused; a folder of its own under the state folder", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  expect(RESULT_DEFAULTS).toEqual({ capBytes: 1 << 30, maxAgeMs: 7 * 24 * 3_600_000 });
  expect([store.folder, store.capBytes, store.maxAgeMs]).toEqual([join(dir.path, "results"), 1 << 30, 7 * 24 * 3_600_000]);
  expect(REF_PREFIX).toBe("cxref:sha256-");
});

test("offsets and lengths are clamped to the result; info and text read it whole; the origin file, when unreadable, is left out", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { ref, sha256 } = store.put("0123456789", { plugin: "p", tool: "t" });
  expect(store.read(ref, -5, 3).bytes.toString()).toBe("012");
  expect(store.read(ref, 8).bytes.toString()).toBe("89");
  expect(store.read(ref, 20, 5).bytes.toString()).toBe("");
  expect(store.read(ref, 4, 100).bytes.toString()).toBe("456789");
  const info = store.info(ref);
  expect(info).toMatchObject({ ref, sha256, bytes: 10, plugin: "p", tool: "t" });
  expect(typeof info.createdAt).toBe("string");
  expect(Math.abs(info.usedAt - Date.now())).toBeLessThan(5000);
  expect(store.text(ref)).toBe("0123456789");
  writeFileSync(`${store.pathOf(sha256)}.json`, "{ not json");
  expect(store.info(ref)).toEqual({ ref, sha256, bytes: 10, usedAt: expect.any(Number) });
  writeFileSync(`${store.pathOf(sha256)}.json`, JSON.stringify({ plugin: 3, tool: "t", createdAt: null }));
  expect(store.info(ref)).toEqual({ ref, sha256, bytes: 10, usedAt: expect.any(Number), plugin: undefined, tool: "t", createdAt: undefined });
});

test("refusals name what is wrong: not a reference, expired after N hours, a folder in a result's place", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path, { maxAgeMs: 2 * 3_600_000 });
  const bad = thrown(() => store.read("cxref:sha256-xyz"));
  expect(bad.code).toBe("E_INVALID_INPUT");
  expect(bad.message).toBe(`"cxref:sha256-xyz" is not a result reference; one reads cxref:sha256- and 64 hexadecimal digits`);
  expect(thrown(() => store.read("x".repeat(300))).message).toStartWith(`"${"x".repeat(100)}" is not`);
  const { ref, sha256 } = store.put("expiring", { plugin: "p", tool: "t" });
  const old = new Date(Date.now() - 3 * 3_600_000);
  utimesSync(store.pathOf(sha256), old, old);
  const expired = thrown(() => store.read(ref));
  expect(expired.message).toBe(`result ${ref} has expired: unused for over 2 hours`);
  expect(expired.hint).toBe("run the tool again for a fresh result; reap removes expired results");
  const unknown = thrown(() => store.info(`cxref:sha256-${"1".repeat(64)}`));
  expect(unknown.hint).toBe("run the tool again for a fresh result; a reference is read only through the state folder that made it");
  rmSync(store.pathOf(sha256));
  mkdirSync(store.pathOf(sha256), { mode: 0o700 });
  const folder = thrown(() => store.read(ref));
  expect(folder.code).toBe("E_STATE");
  expect(folder.message).toBe(`the stored result ${store.pathOf(sha256)} is not trusted: it is not a plain file of this user's with mode 0600 (mode 700)`);
  expect(folder.hint).toBe("cxagent did not write it so, or it was changed since; remove it (the tool can be run again for a fresh result)");
  expect(folder.details).toEqual({ path: store.pathOf(sha256) });
});

test("scan: results least recently used first; a result not 0600, a folder named like one, or any other name is foreign; origin files are neither", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  expect(store.scan()).toEqual({ results: [], foreign: [], leftovers: [] }); // no folder yet
  const a = store.put("aaaa", { plugin: "p", tool: "t" });
  const b = store.put("bbbbbb", { plugin: "p", tool: "t" });
  utimesSync(store.pathOf(b.sha256), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const loose = store.put("loose", { plugin: "p", tool: "t" });
  chmodSync(store.pathOf(loose.sha256), 0o640);
  mkdirSync(join(store.folder, `sha256-${"c".repeat(64)}`));
  writeFileSync(join(store.folder, ".1.2.x.tmp.extra"), "");
  const scan = store.scan();
  expect(scan.results.map((r) => [r.hex, r.bytes])).toEqual([
    [b.sha256, 6],
    [a.sha256, 4],
  ]);
  expect(scan.foreign.sort()).toEqual([store.pathOf(loose.sha256), join(store.folder, `sha256-${"c".repeat(64)}`), join(store.folder, ".1.2.x.tmp.extra")].sort());
  expect(scan.leftovers).toEqual([]);
});

test("eviction removes the least recently used until the rest fit, never the one just stored; a dry reap removes nothing but names what it would", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path, { capBytes: 10 });
  const first = store.put("12345", { plugin: "p", tool: "t" });
  utimesSync(store.pathOf(first.sha256), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const second = store.put("67890", { plugin: "p", tool: "t" }); // 10 bytes: both fit exactly
  expect(existsSync(store.pathOf(first.sha256))).toBe(true);
  expect(store.evict()).toEqual([]);
  // A store holding a result older than this one: the older goes, with its origin file.
  utimesSync(store.pathOf(second.sha256), new Date(Date.now() - 30_000), new Date(Date.now() - 30_000));
  const third = store.put("x", { plugin: "p", tool: "t" });
  expect([existsSync(store.pathOf(first.sha256)), existsSync(`${store.pathOf(first.sha256)}.json`), existsSync(store.pathOf(second.sha256)), existsSync(store.pathOf(third.sha256))]).toEqual([false, false, true, true]);
  // keep: even the least recent is kept when named.
  const small = new ResultStore(dir.path, { capBytes: 1 });
  expect(small.evict(second.sha256)).toEqual([`${REF_PREFIX}${third.sha256}`]);
  expect(existsSync(store.pathOf(second.sha256))).toBe(true);
  // A leftover is named by a dry reap and stays.
  writeFileSync(join(store.folder, ".9.9.dead.result.tmp"), "half");
  const dry = store.reap({ dryRun: true });
  expect(dry.leftovers).toEqual([join(store.folder, ".9.9.dead.result.tmp")]);
  expect(existsSync(join(store.folder, ".9.9.dead.result.tmp"))).toBe(true);
});

test("a writer: bytes counted; written after finishing, or finished twice, is refused; abort removes its temp file; a folder gone before finishing is E_STATE", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const w = store.begin();
  w.write(Buffer.from("abc"));
  w.write(new Uint8Array(0));
  w.write(Buffer.from("de"));
  expect(w.bytes).toBe(5);
  expect(w.finish({ plugin: "p", tool: "t" })).toEqual({ ref: `${REF_PREFIX}${sha("abcde")}`, sha256: sha("abcde"), bytes: 5 });
  expect(thrown(() => w.write(Buffer.from("x"))).message).toBe("a result was written after it was finished");
  expect(thrown(() => w.finish({ plugin: "p", tool: "t" })).message).toBe("a result was finished twice");
  const gone = store.begin();
  gone.write(Buffer.from("half"));
  expect(readdirSync(store.folder).filter((n) => n.endsWith(".tmp"))).toHaveLength(1);
  gone.abort();
  gone.abort();
  expect(readdirSync(store.folder).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  const lost = store.begin();
  lost.write(Buffer.from("lost"));
  rmSync(store.folder, { recursive: true });
  const error = thrown(() => lost.finish({ plugin: "p", tool: "t" }));
  expect(error.code).toBe("E_STATE");
});

test("names: only the exact patterns count; anything around them is foreign, and a reference must be exactly one", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { sha256 } = store.put("named", { plugin: "p", tool: "t" });
  const hex = sha256;
  const odd = [`x-sha256-${hex}`, `sha256-${hex}x`, `x-sha256-${hex}.json`, `sha256-${hex}.jsonx`, `x.1.2.a.result.tmp`, `.1.2.a.result.tmpx`, "mine"];
  for (const name of odd) writeFileSync(join(store.folder, name), "x", { mode: 0o600 });
  const scan = store.scan();
  expect(scan.results.map((r) => r.hex)).toEqual([hex]);
  expect(scan.foreign.sort()).toEqual(odd.map((n) => join(store.folder, n)).sort());
  expect(thrown(() => store.read(`x${REF_PREFIX}${hex}`)).code).toBe("E_INVALID_INPUT");
});

test("a result of another user's is not trusted; a result whose origin file is gone is still reaped", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path, { maxAgeMs: 60_000 });
  const { ref, sha256 } = store.put("theirs", { plugin: "p", tool: "t" });
  chownSync(store.pathOf(sha256), 4321, 4321);
  expect(thrown(() => store.read(ref)).message).toContain("is not trusted: it is not a plain file of this user's with mode 0600");
  const other = store.put("no origin", { plugin: "p", tool: "t" });
  rmSync(`${store.pathOf(other.sha256)}.json`);
  const old = new Date(Date.now() - 120_000);
  utimesSync(store.pathOf(other.sha256), old, old);
  expect(store.reap().removed).toEqual([other.ref]);
  expect(existsSync(store.pathOf(other.sha256))).toBe(false);
});

test("a write under way is not named by a dry reap; a temp removed before it is finished is E_STATE naming the store, with its cause", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const live = store.begin();
  live.write(Buffer.from("live"));
  expect(store.reap({ dryRun: true }).leftovers).toEqual([]);
  for (const name of readdirSync(store.folder)) if (name.endsWith(".result.tmp")) rmSync(join(store.folder, name));
  const error = thrown(() => live.finish({ plugin: "p", tool: "t" }));
  expect(error.code).toBe("E_STATE");
  expect(error.message).toStartWith(`cannot store a result in ${store.folder}: `);
  expect((error.cause as NodeJS.ErrnoException).code).toBe("ENOENT");
});

test("reading, storing, reaping and aborting leave no file descriptor open", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { ref } = store.put("x".repeat(3 << 20), { plugin: "p", tool: "t" });
  writeFileSync(join(store.folder, ".1.1.dead.result.tmp"), "");
  const open = () => readdirSync("/proc/self/fd").length;
  store.read(ref);
  const before = open();
  for (let i = 0; i < 20; i++) {
    store.read(ref, 5, 10);
    store.put(`small ${i}`, { plugin: "p", tool: "t" });
    store.reap({ dryRun: true });
    store.begin().abort();
  }
  store.reap();
  expect(open()).toBeLessThanOrEqual(before);
});

test("a results folder that cannot be made (a file is there) is E_STATE naming it, with what to do, when a result is begun or put", () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "results"), "not a folder");
  const store = new ResultStore(dir.path);
  for (const error of [thrown(() => store.begin()), thrown(() => store.put("x", { plugin: "p", tool: "t" }))]) {
    expect(error.code).toBe("E_STATE");
    expect(error.message).toBe(`cannot store a result in ${store.folder}: EEXIST: file already exists, mkdir '${store.folder}'`);
    expect(error.hint).toBe("make it a folder cxagent can write (it is under the state folder), or call the tool again without a delivery cap");
    expect((error.cause as NodeJS.ErrnoException).code).toBe("EEXIST");
  }
});
