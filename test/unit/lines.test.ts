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

/**
 * A splitter fed as the socket reader feeds it. Each step pushes one chunk (what the socket read),
 * and while that push runs, `pull` hands out the step's pieces in turn (what else has arrived; a
 * piece longer than the room given is split), then 0, as recv says when nothing more has come.
 * What was not pulled is what the socket reads next: it starts the next step's chunk.
 */
function splitPulled(steps: { chunk: string; pieces?: string[] }[], cap = 64 << 20): { lines: Line[]; pulledBytes: number } {
  const lines: Line[] = [];
  const encoder = new TextEncoder();
  let queue: Uint8Array[] = [];
  let pulledBytes = 0;
  const splitter = new LineSplitter(cap, (into) => {
    const piece = queue.shift();
    if (!piece) return 0;
    const n = Math.min(piece.length, into.length);
    into.set(piece.subarray(0, n));
    if (n < piece.length) queue.unshift(piece.subarray(n));
    pulledBytes += n;
    return n;
  });
  let left = new Uint8Array(0);
  for (const step of steps) {
    queue = (step.pieces ?? []).map((p) => encoder.encode(p));
    splitter.push(Buffer.concat([left, encoder.encode(step.chunk)]), (l) => lines.push(l));
    left = Buffer.concat(queue);
  }
  expect(left.length).toBe(0);
  splitter.end((l) => lines.push(l));
  return { lines, pulledBytes };
}

const k5 = (c: string) => c.repeat(5000);

test("an open line of 4 KiB or more is read on from the source, its newline first in a piece or anywhere", () => {
  const { lines, pulledBytes } = splitPulled([
    { chunk: k5("a"), pieces: ["\nsh", "ort\n"] },
    { chunk: k5("b"), pieces: ["bb", "\nnext"] },
    { chunk: "\n" },
  ]);
  expect(lines).toEqual([
    { text: k5("a"), cut: 0 },
    { text: "short", cut: 0 },
    { text: k5("b") + "bb", cut: 0 },
    { text: "next", cut: 0 },
  ]);
  expect(pulledBytes).toBe(3 + 2 + 5); // "ort\n" came as the next chunk: after "sh", the open line was short
});

test("a short open line waits for the next chunk; a long one with nothing more to read finishes in it", () => {
  const { lines, pulledBytes } = splitPulled([
    { chunk: "x".repeat(4000) },
    { chunk: "y\n" + k5("c"), pieces: ["cc"] },
    { chunk: "dd\nz\n" },
  ]);
  expect(lines).toEqual([
    { text: "x".repeat(4000) + "y", cut: 0 },
    { text: k5("c") + "ccdd", cut: 0 },
    { text: "z", cut: 0 },
  ]);
  expect(pulledBytes).toBe(2);
});

test("a line read on from the source past the buffer's first size (1 MiB) comes out whole, and so does a long line after it", () => {
  const big = Array.from({ length: 3 << 10 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(1024)).join("");
  const { lines, pulledBytes } = splitPulled([{ chunk: big.slice(0, 5000), pieces: [big.slice(5000, 700_000), big.slice(700_000) + "\n" + k5("d"), "\n"] }]);
  expect(lines.length).toBe(2);
  expect(lines[0]!.text === big).toBe(true);
  expect(lines[1]).toEqual({ text: k5("d"), cut: 0 });
  expect(pulledBytes).toBe(big.length - 5000 + 5002);
});

test("reading on from the source stops at the cap; the rest of an over-long line is counted as before", () => {
  const { lines, pulledBytes } = splitPulled([{ chunk: k5("a"), pieces: ["a".repeat(3000)] }, { chunk: "\nok\n" }], 6000);
  expect(pulledBytes).toBe(1000);
  expect(lines).toEqual([
    { text: "a".repeat(6000), cut: 2000 },
    { text: "ok", cut: 0 },
  ]);
});

test("limits (issue 41): each line's cap is asked from its head; passing it is told at once, with the head only kept; a runaway line is told once", () => {
  const told: string[] = [];
  const lines: Line[] = [];
  const splitter = new LineSplitter(1 << 20, undefined, {
    capOf: (head) => (Buffer.from(head).toString().startsWith("{\"id\":7") ? 8192 : 1 << 20),
    onOverflow: (head, seen, cap) => told.push(`overflow ${Buffer.from(head).toString().slice(0, 7)} ${head.length} ${seen} ${cap}`),
    runawayAt: 30_000,
    onRunaway: (seen) => told.push(`runaway ${seen}`),
  });
  const chunk = (text: string) => splitter.push(new TextEncoder().encode(text), (l) => lines.push(l));
  chunk(`{"id":6,"x":"${"a".repeat(9000)}"}\n`); // another call's cap: whole
  chunk(`{"id":7,"x":"${"a".repeat(5000)}`);
  expect(told).toEqual([]);
  chunk("b".repeat(5000)); // 8192 passed: told now, before any line end
  expect(told).toEqual(["overflow {\"id\":7 256 10013 8192"]);
  chunk("c".repeat(30_000)); // past 30000 dropped: a runaway, told once
  chunk("c".repeat(30_000));
  expect(told).toEqual(["overflow {\"id\":7 256 10013 8192", "runaway 40013"]);
  chunk("\"}\n{\"id\":7}\n");
  expect(lines.map((l) => [l.text.length, l.cut])).toEqual([[9015, 0], [256, 70015 - 256], [8, 0]]);
  chunk(`{"id":7,"x":"${"a".repeat(9000)}"}\n`); // over its cap within one chunk: cut too
  expect(lines.at(-1)!.cut).toBeGreaterThan(0);
  expect(told.length).toBe(3);
});
