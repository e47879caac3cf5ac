import { expect, test } from "bun:test";
import { type Line, LineSplitter, readLines } from "../../src/host/lines.ts";

function split(chunks: string[], cap = 1024): Line[] {
  const out: Line[] = [];
  const splitter = new LineSplitter(cap);
  const encoder = new TextEncoder();
  for (const c of chunks) splitter.push(encoder.encode(c), (l) => out.push(l));
  splitter.end((l) => out.push(l));
  return out;
}

test("splits lines across and within chunks", () => {
  expect(split(["a\nb", "c\n\nd"])).toEqual([
    { text: "a", cut: 0 },
    { text: "bc", cut: 0 },
    { text: "", cut: 0 },
    { text: "d", cut: 0 },
  ]);
});

test("keeps the head of an over-long line and counts the rest", () => {
  expect(split(["abcdef", "ghij\nxy\n"], 4)).toEqual([
    { text: "abcd", cut: 6 },
    { text: "xy", cut: 0 },
  ]);
  expect(split(["abcdefgh\nok\n"], 4)).toEqual([
    { text: "abcd", cut: 4 },
    { text: "ok", cut: 0 },
  ]);
});

test("a multi-byte character split between chunks survives", async () => {
  const bytes = new TextEncoder().encode("é\n");
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes.subarray(0, 1));
      c.enqueue(bytes.subarray(1));
      c.close();
    },
  });
  const out: string[] = [];
  await readLines(stream, 100, (l) => out.push(l.text));
  expect(out).toEqual(["é"]);
});
