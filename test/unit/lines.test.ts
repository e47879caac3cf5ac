import { expect, test } from "bun:test";
import { readLines } from "../../src/host/lines.ts";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function collect(chunks: string[], cap = 1024) {
  const out = [];
  for await (const line of readLines(streamOf(chunks), cap)) out.push(line);
  return out;
}

test("splits lines across and within chunks", async () => {
  expect(await collect(["a\nb", "c\n\nd"])).toEqual([
    { text: "a", cut: 0 },
    { text: "bc", cut: 0 },
    { text: "", cut: 0 },
    { text: "d", cut: 0 },
  ]);
});

test("keeps the head of an over-long line and counts the rest", async () => {
  expect(await collect(["abcdef", "ghij\nxy\n"], 4)).toEqual([
    { text: "abcd", cut: 6 },
    { text: "xy", cut: 0 },
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
  const out = [];
  for await (const line of readLines(stream, 100)) out.push(line.text);
  expect(out).toEqual(["é"]);
});
