/** The spill while reading (issue 41): the text it stores is the text JSON.parse gives, however the line is cut. */
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { ContentSpill } from "../../src/results/spill.ts";
import { ResultStore } from "../../src/results/store.ts";
import { tempDir } from "../helpers.ts";

function through(line: string, cap: number, cuts: number[], store: ResultStore) {
  const bytes = Buffer.from(line);
  const spill = new ContentSpill(store, cap);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    spill.write(bytes.subarray(at, Math.min(cut, bytes.length)));
    at = Math.min(cut, bytes.length);
  }
  const skeleton = JSON.parse(spill.end());
  return { skeleton, outcome: spill.outcome({ plugin: "p", tool: "t" }) };
}

test("escapes, surrogate pairs, lone surrogates and multi-byte text decode as JSON.parse does, cut anywhere", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const pieces = ["plain ", "\n\t\"quoted\"\\ ", "é漢字", "😀", "\u0001", "/", "\ud800", "x", "\udfff", "end"];
  let text = "";
  for (let i = 0; i < 400; i++) text += pieces[i % pieces.length]! + i;
  // JSON.stringify writes lone surrogates as \\udXXX escapes; a plugin may also escape what it need not.
  const line = `{"id":3,"ok":true,"result":{"success":true,"output":{"before":"a\\"b","content":${JSON.stringify(text).replace(/é/g, "\\u00e9").replace(/😀/g, "\\ud83d\\ude00")},"after":[1,{"content":"no"}]},"exitCode":0}}`;
  const expected = Buffer.from((JSON.parse(line) as { result: { output: { content: string } } }).result.output.content, "utf8");
  const size = Buffer.byteLength(line);
  for (let seed = 1; seed <= 40; seed++) {
    const cuts: number[] = [];
    let x = seed * 7919;
    for (let at = 0; at < size; ) {
      x = (x * 48271) % 2147483647;
      at += 1 + (x % 97);
      cuts.push(at);
    }
    const { skeleton, outcome } = through(line, 1024, cuts, store);
    expect(skeleton.result.output).toEqual({ before: 'a"b', content: "", after: [1, { content: "no" }] });
    expect(skeleton.id).toBe(3);
    expect(outcome?.kind).toBe("spilled");
    if (outcome?.kind !== "spilled") continue;
    expect(store.read(outcome.stored.ref).bytes.equals(expected)).toBe(true);
    expect(outcome.head.equals(expected.subarray(0, 1024))).toBe(true);
    expect(outcome.tail.equals(expected.subarray(expected.length - 1024))).toBe(true);
  }
});

test("within the cap the content comes back whole and nothing is stored; a content that is not text, or twice, is left to the line", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const small = through(`{"id":1,"ok":true,"result":{"output":{"content":"sh\\u00f6rt"}}}`, 1024, [10, 40], store);
  expect(small.outcome).toEqual({ kind: "whole", text: "shört" });
  const number = through(`{"id":1,"ok":true,"result":{"output":{"content":42}}}`, 1024, [30], store);
  expect(number.outcome).toBeNull();
  expect(number.skeleton.result.output.content).toBe(42);
  const twice = through(`{"id":1,"ok":true,"result":{"output":{"content":"${"a".repeat(3000)}","content":"second"}}}`, 1024, [100, 2000], store);
  expect(twice.outcome).toBeNull();
  expect(twice.skeleton.result.output.content).toBe("second");
  expect(store.scan()).toEqual({ results: [], foreign: [], leftovers: [] });
  expect(readdirSync(store.folder).filter((n) => n.endsWith(".tmp"))).toEqual([]); // no temp file left
});
