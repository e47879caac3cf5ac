/** The result store (issue 41): content-addressed, 0600, checked on every read, LRU under a cap, reaped. */
import { expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { refHex, ResultStore } from "../../src/results/store.ts";
import { refusal, tempDir } from "../helpers.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const refusalOf = (f: () => unknown) => refusal((async () => f())());

test("a result is stored by its hash, 0600 in a 0700 folder, with its origin; reads give exact bytes at offsets", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "héllo, " + "x".repeat(3 << 20) + " end";
  const stored = store.put(text, { plugin: "p", tool: "t" });
  const bytes = Buffer.byteLength(text);
  expect(stored).toEqual({ ref: `cxref:sha256-${sha(text)}`, sha256: sha(text), bytes });
  expect(refHex(stored.ref)).toBe(sha(text));
  expect(refHex(`${stored.ref} `)).toBeNull();
  const file = join(dir.path, "results", `sha256-${sha(text)}`);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(statSync(join(dir.path, "results")).mode & 0o777).toBe(0o700);
  expect(readdirSync(join(dir.path, "results")).sort()).toEqual([`sha256-${sha(text)}`, `sha256-${sha(text)}.json`]); // no temp file left
  expect(store.text(stored.ref)).toBe(text);
  const all = Buffer.from(text);
  for (const [offset, length] of [[0, 9], [1 << 20, 100], [bytes - 4, 4], [(1 << 20) - 3, 7], [bytes - 2, 100], [bytes + 5, 10]] as const) {
    expect(store.read(stored.ref, offset, length).bytes.equals(all.subarray(offset, offset + length))).toBe(true);
  }
  expect(store.info(stored.ref)).toMatchObject({ plugin: "p", tool: "t", bytes });
});

test("unknown, malformed, corrupt, loose and foreign: refused or reported by name, never trusted", async () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const stored = store.put("the answer", { plugin: "p", tool: "t" });
  const unknown = await refusalOf(() => store.read(`cxref:sha256-${"0".repeat(64)}`));
  expect(unknown.code).toBe("E_NOT_FOUND");
  expect(unknown.message).toContain("never stored through this state folder, or it expired or was evicted");
  expect((await refusalOf(() => store.read("cxref:sha256-abc"))).code).toBe("E_INVALID_INPUT");
  // Another state folder does not know it.
  using other = tempDir();
  expect((await refusalOf(() => new ResultStore(other.path).read(stored.ref))).code).toBe("E_NOT_FOUND");
  const file = join(dir.path, "results", `sha256-${stored.sha256}`);
  writeFileSync(file, "the answeR", { mode: 0o600 });
  const corrupt = await refusalOf(() => store.read(stored.ref, 0, 3));
  expect(corrupt.code).toBe("E_STATE");
  expect(corrupt.message).toBe(`the stored result ${file} is not trusted: its bytes do not hash to its name`);
  writeFileSync(file, "the answer");
  chmodSync(file, 0o644);
  expect((await refusalOf(() => store.read(stored.ref))).message).toBe(`the stored result ${file} is not trusted: it is not a plain file of this user's with mode 0600 (mode 644)`);
  writeFileSync(join(dir.path, "results", "notes.txt"), "mine");
  // A result's write an ended process left (nobody holds its lock) is removed at once and named; one
  // under way is left alone; an origin file's temp (which holds no lock) only once untouched for an hour.
  const left = join(dir.path, "results", ".123.1700000000000.abc.result.tmp");
  writeFileSync(left, "half");
  const meta = join(dir.path, "results", ".124.1700000000000.abd.tmp");
  const oldMeta = join(dir.path, "results", ".125.1700000000000.abe.tmp");
  writeFileSync(meta, "{");
  writeFileSync(oldMeta, "{");
  utimesSync(oldMeta, new Date(Date.now() - 2 * 3_600_000), new Date(Date.now() - 2 * 3_600_000));
  const writing = store.begin();
  writing.write(Buffer.from("half"));
  const temps = () => readdirSync(join(dir.path, "results")).filter((n) => n.endsWith(".result.tmp"));
  expect(temps()).toHaveLength(2);
  const reaped = store.reap();
  expect(reaped.foreign.sort()).toEqual([join(dir.path, "results", "notes.txt"), file]);
  expect(reaped.leftovers.sort()).toEqual([left, oldMeta].sort());
  expect([existsSync(left), existsSync(oldMeta), existsSync(meta)]).toEqual([false, false, true]);
  expect(temps()).toHaveLength(1);
  expect(store.text(writing.finish({ plugin: "p", tool: "t" }).ref)).toBe("half");
  expect(temps()).toEqual([]);
});

test("past its cap the least recently used results go; a read counts as a use", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path, { capBytes: 3000 });
  const refs: string[] = [];
  for (let i = 0; i < 3; i++) {
    refs.push(store.put(String(i).repeat(1000), { plugin: "p", tool: "t" }).ref);
    const file = join(dir.path, "results", `sha256-${refHex(refs[i]!)}`);
    utimesSync(file, new Date(Date.now() - (10 - i) * 60_000), new Date(Date.now() - (10 - i) * 60_000));
  }
  store.read(refs[0]!); // now the most recent
  const fourth = store.put("3".repeat(1000), { plugin: "p", tool: "t" }).ref;
  const kept = (ref: string) => existsSync(join(dir.path, "results", `sha256-${refHex(ref)}`));
  expect([...refs, fourth].map(kept)).toEqual([true, false, true, true]);
  expect(store.scan().results.reduce((n, r) => n + r.bytes, 0)).toBeLessThanOrEqual(3000);
  const big = store.put("b".repeat(5000), { plugin: "p", tool: "t" }).ref; // alone over the cap: kept, the rest go
  expect([...refs, fourth, big].map(kept)).toEqual([false, false, false, false, true]);
});

test("reap removes results unused for maxAgeMs (a dry run only names them); an expired one is refused by name", async () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path, { maxAgeMs: 60_000 });
  const old = store.put("old", { plugin: "p", tool: "t" }).ref;
  const fresh = store.put("fresh", { plugin: "p", tool: "t" }).ref;
  const file = join(dir.path, "results", `sha256-${refHex(old)}`);
  utimesSync(file, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
  const expired = await refusalOf(() => store.read(old));
  expect(expired.code).toBe("E_NOT_FOUND");
  expect(expired.message).toContain("has expired");
  expect(store.reap({ dryRun: true }).removed).toEqual([old]);
  expect(existsSync(file)).toBe(true);
  expect(store.reap().removed).toEqual([old]);
  expect(existsSync(file)).toBe(false);
  expect(existsSync(`${file}.json`)).toBe(false);
  expect(store.text(fresh)).toBe("fresh");
});
