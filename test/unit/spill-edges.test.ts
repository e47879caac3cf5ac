/**
 * The spill while reading (issue 41), at its edges: every JSON escape and surrogate form cut at
 * every byte, the cap's exact edge, contents past the write buffer, a call given up before or while
 * its content streams, redaction with characters cut between reads, and the key path the content
 * is found at. What is stored is always the text JSON.parse would have given; nothing is left in
 * the store's folder by a spill that was given up.
 */
import { expect, test } from "bun:test";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ContentSpill, type TextStream } from "../../src/results/spill.ts";
import { ResultStore } from "../../src/results/store.ts";
import { Redactor, StreamRedactor } from "../../src/secrets/redact.ts";
import { tempDir } from "../helpers.ts";

const origin = { plugin: "p", tool: "t" };

/** A reply line whose result.output.content is the JSON string literal `literal` (escapes as written). */
const lineWith = (literal: string, before = "", after = "") => `{"id":4,"ok":true,"result":{"success":true,"output":{${before}"content":${literal}${after}},"exitCode":0}}`;

/** The content as JSON.parse gives it, as the UTF-8 bytes Buffer makes of it (a lone surrogate as U+FFFD). */
const parsedContent = (line: string | Buffer) => Buffer.from((JSON.parse(line.toString()) as { result: { output: { content: string } } }).result.output.content, "utf8");

/** The line fed to a fresh spill in the given pieces. */
function feed(line: string | Buffer, cap: number, pieces: number[], store: ResultStore, redact?: TextStream) {
  const bytes = Buffer.isBuffer(line) ? line : Buffer.from(line);
  const spill = new ContentSpill(store, cap, redact);
  let at = 0;
  for (const size of pieces) {
    spill.write(bytes.subarray(at, at + size));
    at += size;
  }
  spill.write(bytes.subarray(at));
  const skeleton = JSON.parse(spill.end());
  return { spill, skeleton, outcome: spill.outcome(origin) };
}

/** A line of `size` bytes read in pieces of 1 byte (every cut at once), of 2, 3, 5, 7 and 11 (every cut against every other), and of 64. */
const readsOf = (size: number) => [1, 2, 3, 5, 7, 11, 64].map((n) => Array<number>(Math.ceil(size / n)).fill(n));

const temps = (store: ResultStore) => (existsSync(store.folder) ? readdirSync(store.folder).filter((n) => n.endsWith(".tmp")) : []);

// Simple escapes, \u with each hex digit's edge (0 9 a f A F), surrogate pairs at their edges, lone
// surrogates before a pair, a \u unit, a simple escape, raw text and the closing quote.
// (Bun writes a raw template's non-ASCII characters as \u escapes of its own: those are joined to it.)
const ESCAPES = String.raw`"\b\f\r\/\"\\\n\tx\u0030\u0039\u00a0\u00af\u00A0\u00AF\u0fa0\uABCD\uabcd\uF900\ud800\udc00\udbff\udfff\uD83D\uDE00\udc00\udbffx\ud800\ud800\udc00\ud7ff\ue000\ud800\n\ud800` + "é" + String.raw`\ud800\u0041plain ` + "é漢😀" + String.raw`\ud800"`;

test("every escape and surrogate form, read a byte at a time and in pieces of other sizes, is stored as JSON.parse decodes it; so is its head and its tail", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const line = lineWith(ESCAPES, `"a\\"\\\\b":"x\\"y",`);
  const expected = parsedContent(line);
  expect(expected.length).toBeGreaterThan(64);
  const size = Buffer.byteLength(line);
  for (const pieces of readsOf(size)) {
    const { skeleton, outcome } = feed(line, 16, pieces, store);
    expect(skeleton.result.output).toEqual({ 'a"\\b': 'x"y', content: "" });
    if (outcome?.kind !== "spilled") throw new Error(`not spilled in reads of ${pieces[0]}`);
    expect(store.read(outcome.stored.ref).bytes.toString("hex")).toBe(expected.toString("hex"));
    expect(outcome.stored.bytes).toBe(expected.length);
    expect(outcome.head.toString("hex")).toBe(expected.subarray(0, 16).toString("hex"));
    expect(outcome.tail.toString("hex")).toBe(expected.subarray(expected.length - 16).toString("hex"));
    // Within the cap: the same text whole, nothing stored.
    const whole = feed(line, 4096, pieces, store).outcome;
    if (whole?.kind !== "whole") throw new Error("not whole");
    expect(Buffer.from(whole.text).toString("hex")).toBe(expected.toString("hex"));
  }
  expect(temps(store)).toEqual([]);
});

test("a content of exactly the cap's bytes comes back whole; one byte more is spilled, its head and tail the cap's bytes", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const content = "é".repeat(8) + "漢字"; // 22 bytes
  expect(feed(lineWith(JSON.stringify(content)), 22, [30], store).outcome).toEqual({ kind: "whole", text: content });
  const over = feed(lineWith(JSON.stringify(content)), 21, [30], store).outcome;
  if (over?.kind !== "spilled") throw new Error("not spilled");
  expect(store.text(over.stored.ref)).toBe(content);
  expect(over.head.equals(Buffer.from(content).subarray(0, 21))).toBe(true);
  expect(over.tail.equals(Buffer.from(content).subarray(1))).toBe(true);
  expect(store.scan().results.length).toBe(1);
});

test("a content past the write buffer (256 KiB), in one read or many, is stored whole and in order", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = Array.from({ length: 700 << 10 }, (_, i) => (i % 5000 === 0 ? "\n" : String.fromCharCode(97 + (i % 26)))).join("");
  const line = lineWith(JSON.stringify(text));
  const expected = Buffer.from(text);
  for (const pieces of [[], [60], [60, 300_000], Array(Math.ceil(line.length / 4093)).fill(4093)]) {
    const { outcome } = feed(line, 1024, pieces, store);
    if (outcome?.kind !== "spilled") throw new Error("not spilled");
    expect(outcome.stored.sha256).toBe(new Bun.CryptoHasher("sha256").update(expected).digest("hex"));
    expect(store.read(outcome.stored.ref).bytes.equals(expected)).toBe(true);
    expect(outcome.tail.equals(expected.subarray(expected.length - 1024))).toBe(true);
  }
  // Plain text in reads longer than what is left of the buffer, and longer than the buffer itself.
  const plain = "p".repeat(600_000);
  const plainLine = lineWith(JSON.stringify(plain));
  const at = plainLine.indexOf("ppp");
  for (const pieces of [[at + 100_000, 200_000], [at, 300_000], [at + 10, 262_134, 10]]) {
    const { outcome } = feed(plainLine, 1024, pieces, store);
    if (outcome?.kind !== "spilled") throw new Error("not spilled");
    expect(store.text(outcome.stored.ref) === plain).toBe(true);
  }
  expect(temps(store)).toEqual([]);
});

test("a spill given up before its content, while it streams, or past its read cap leaves nothing in the store; the rest of the line is still parsed", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "z".repeat(5000);
  const line = Buffer.from(lineWith(JSON.stringify(text), `"n":"\\"",`));
  const at = line.indexOf("zzz") + 3000;
  // Given up before the content begins: no temp file is ever made.
  const early = new ContentSpill(store, 1024);
  early.write(line.subarray(0, 20));
  early.discard();
  early.write(line.subarray(20, at));
  expect(temps(store)).toEqual([]);
  early.write(line.subarray(at));
  expect(JSON.parse(early.end()).result.output).toEqual({ n: '"', content: "" });
  expect(early.outcome(origin)).toBeNull();
  // Given up while it streams: its temp file goes at once, and the closing quote is taken as usual.
  for (const stop of ["discard", "abort"] as const) {
    const spill = new ContentSpill(store, 1024);
    spill.write(line.subarray(0, at));
    expect(temps(store).length).toBe(1);
    spill[stop]();
    expect(temps(store)).toEqual([]);
    spill.write(line.subarray(at, at + 1000));
    spill.write(line.subarray(at + 1000));
    expect(JSON.parse(spill.end()).id).toBe(4);
    expect(spill.outcome(origin)).toBeNull();
  }
  // Given up, then a content past the write buffer in one read: nothing is written, nothing thrown.
  const large = Buffer.from(lineWith(JSON.stringify("L".repeat(300_000))));
  const late = new ContentSpill(store, 1024);
  late.write(large.subarray(0, 80));
  late.discard();
  late.write(large.subarray(80));
  expect(late.outcome(origin)).toBeNull();
  // A line that ends inside the content (its writer stopped): nothing is taken from it.
  const cut = new ContentSpill(store, 1024);
  cut.write(line.subarray(0, at));
  expect(cut.outcome(origin)).toBeNull();
  expect(temps(store)).toEqual([]);
  expect(store.scan()).toEqual({ results: [], foreign: [], leftovers: [] });
});

test("with a redactor: a secret and a character cut between reads are stored redacted, and bytes that are not UTF-8 as U+FFFD, as the parsed line has them", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const redactor = new Redactor();
  redactor.add("tok", Buffer.from("s3cr3t-Value"));
  const [start, end] = lineWith("@").split("@");
  const line = Buffer.concat([Buffer.from(`${start}"a s3cr3t-Value é${"b".repeat(40)} s3cr3t-Value \\u00e9 x`), Buffer.from([0xc3]), Buffer.from(`"${end}`)]);
  const expected = Buffer.from(redactor.text(parsedContent(line).toString()));
  expect(expected.toString()).toBe(`a [REDACTED:tok] é${"b".repeat(40)} [REDACTED:tok] é x\ufffd`);
  for (const pieces of readsOf(line.length)) {
    const { outcome } = feed(line, 16, pieces, store, new StreamRedactor(redactor));
    if (outcome?.kind !== "spilled") throw new Error("not spilled");
    expect(store.read(outcome.stored.ref).bytes.toString("hex")).toBe(expected.toString("hex"));
    const whole = feed(line, 4096, pieces, store, new StreamRedactor(redactor)).outcome;
    expect(whole).toEqual({ kind: "whole", text: expected.toString() });
  }
});

test("only a string at result.output.content is spilled: not one deeper, in an array, at another path or under keys of the same name elsewhere", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const big = JSON.stringify("q".repeat(3000));
  const lines = [
    `{"id":1,"result":{"output":{"x":{"content":${big}}}}}`,
    `{"id":1,"result":{"output":[{"content":${big}}]}}`,
    `{"id":1,"result":{"content":${big}}}`,
    `{"id":1,"output":{"content":${big}}}`,
    `{"id":1,"other":{"output":{"content":${big}}}}`,
    `{"id":1,"result":{"other":{"content":${big}}}}`,
    `[{"result":{"output":{"content":${big}}}}]`,
    `{"id":1,"result":{"output":{"more":[${big},"content"],"contents":${big}}}}`,
    // the key path a string is at is its own object's, not the last keys read at those depths
    `{"result":{"output":{}},"result":[{"content":${big}}]}`,
    `{"output":{"content":1},"x":[[{"y":${big}}]]}`,
    `{"id":1,"result":{"output":{"content":{"y":${big}}}}}`,
    `{"id":1,"result":{"output":{"content":[${big}]}}}`,
    `{"result":{"output":{"content":1},"output":[${big}]}}`,
    `{"id":1,"result":{"output":{"content-":${big}}}}`,
    `{"id":1,"result":{"output":{"contenu":${big}}}}`,
    `{"id":1,"result":{"outpu":{"content":${big}}}}`,
    `{"id":1,"resul":{"output":{"content":${big}}}}`,
  ];
  // An empty key first.
  const first = feed(`{"":"","result":{"output":{"content":${big}}}}`, 1024, [], store).outcome;
  expect(first?.kind).toBe("spilled");
  for (const line of lines) {
    const { skeleton, outcome } = feed(line, 1024, [line.length >> 1], store);
    expect(outcome).toBeNull();
    expect(skeleton).toEqual(JSON.parse(line));
  }
  // After an empty object, a key; keys of 64 bytes and more, escaped quotes in keys and values; spaces between tokens.
  const long = "k".repeat(70);
  const line = `{ "id" : 1 , "result" : { "a\\"" : {} , "${long}" : "v\\"" , "output" : { "e" : [] , "s" : "{\\"content\\":[\\"" , "content" : ${big} } } }`;
  const { skeleton, outcome } = feed(line, 1024, [40, 90], store);
  expect(outcome?.kind).toBe("spilled");
  expect(skeleton.result).toEqual({ 'a"': {}, [long]: 'v"', output: { e: [], s: '{"content":["', content: "" } });
});

test("keys written with escapes are the keys JSON.parse reads: a content named so is spilled, and twice (either spelling last) is left to the line", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const big = "w".repeat(3000);
  const escaped = `{"id":1,"r\\u0065sult":{"output":{"cont\\u0065nt":${JSON.stringify(big)}}}}`;
  const one = feed(escaped, 1024, [30], store).outcome;
  if (one?.kind !== "spilled") throw new Error("not spilled");
  expect(store.text(one.stored.ref)).toBe(big);
  for (const [first, second] of [
    ["content", "cont\\u0065nt"],
    ["cont\\u0065nt", "content"],
    ["content", "\\u0063ontent"],
  ]) {
    const line = `{"id":1,"result":{"output":{"${first}":${JSON.stringify(big)},"${second}":"last"}}}`;
    const { skeleton, outcome } = feed(line, 1024, [30, 2000], store);
    expect(outcome).toBeNull();
    expect(skeleton.result.output.content).toBe("last");
  }
});

test("a store that cannot be written: a content within the cap still comes back whole; one over it is E_STATE naming the folder, not an empty text", () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "results"), "not a folder");
  const store = new ResultStore(dir.path);
  const small = feed(lineWith(JSON.stringify("s".repeat(1000))), 1024, [30], store);
  expect(small.outcome).toEqual({ kind: "whole", text: "s".repeat(1000) });
  const spill = new ContentSpill(store, 1024);
  spill.write(Buffer.from(lineWith(JSON.stringify("s".repeat(5000)))));
  expect(JSON.parse(spill.end()).result.output.content).toBe("");
  let error: unknown;
  try {
    spill.outcome(origin);
  } catch (caught) {
    error = caught;
  }
  expect(error).toMatchObject({ code: "E_STATE" });
  expect((error as Error).message).toStartWith(`cannot store a result in ${store.folder}: `);
  expect((error as Error).message).toContain("EEXIST");
  expect((error as { hint?: string }).hint).toContain("state folder");
});
