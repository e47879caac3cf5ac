/**
 * The line splitter (host/lines.ts) at its edges: a line of exactly the cap, the ends of a stream,
 * lines joined past the kept buffer, reading now from the source (pullNow) into a buffer it reuses,
 * the read-on threshold, and the limits of issue 41: who is asked a line's cap and with what, a
 * sink that takes a line's bytes (and is told when the line passes its cap), the runaway's edge.
 */
import { expect, test } from "bun:test";
import { HEAD_KEPT, type Line, type LineLimits, type LineSink, LineSplitter, readLines } from "../../src/host/lines.ts";

const encode = (text: string) => new TextEncoder().encode(text);

function split(chunks: (string | Uint8Array)[], cap = 1024, limits?: LineLimits): Line[] {
  const out: Line[] = [];
  const splitter = new LineSplitter(cap, undefined, limits);
  for (const c of chunks) splitter.push(typeof c === "string" ? encode(c) : c, (l) => out.push(l));
  splitter.end((l) => out.push(l));
  return out;
}

/** A source for `pull`: hands out what is queued, as much as fits, then 0. */
function source() {
  const queue: Uint8Array[] = [];
  let pulled = 0;
  let calls = 0;
  return {
    queue: (text: string) => queue.push(encode(text)),
    get pulled() {
      return pulled;
    },
    get calls() {
      return calls;
    },
    pull: (into: Uint8Array) => {
      calls++;
      const piece = queue.shift();
      if (!piece) return 0;
      const n = Math.min(piece.length, into.length);
      into.set(piece.subarray(0, n));
      if (n < piece.length) queue.unshift(piece.subarray(n));
      pulled += n;
      return n;
    },
  };
}

test("a line of exactly the cap is whole, in one chunk or cut across several; one byte more is cut", () => {
  expect(split(["abcd\n"], 4)).toEqual([{ text: "abcd", cut: 0 }]);
  expect(split(["ab", "cd\n"], 4)).toEqual([{ text: "abcd", cut: 0 }]);
  expect(split(["ab", "cd", "\n"], 4)).toEqual([{ text: "abcd", cut: 0 }]);
  expect(split(["ab", "cde\n"], 4)).toEqual([{ text: "abcd", cut: 1 }]);
  expect(split(["abcde"], 4)).toEqual([{ text: "abcd", cut: 1 }]);
});

test("a stream that ends on a newline, or with nothing, hands over no empty line more; one that ends inside a line hands it over", () => {
  expect(split(["a\n"])).toEqual([{ text: "a", cut: 0 }]);
  expect(split(["a\n", ""])).toEqual([{ text: "a", cut: 0 }]);
  expect(split([])).toEqual([]);
  expect(split(["\n"])).toEqual([{ text: "", cut: 0 }]);
  expect(split(["a\nb"])).toEqual([
    { text: "a", cut: 0 },
    { text: "b", cut: 0 },
  ]);
});

test("a line over the kept buffer (8 MiB) in many chunks, and lines after it, come out whole", () => {
  const big = "q".repeat(9 << 20);
  const chunks: Uint8Array[] = [];
  const bytes = encode(`${big}\nshort\n${"r".repeat(100_000)}`);
  for (let at = 0; at < bytes.length; at += 65_536) chunks.push(bytes.subarray(at, at + 65_536));
  const lines = split([...chunks, "r\n", "s", "t\n"], 64 << 20);
  expect(lines.length).toBe(4);
  expect(lines[0]!.text === big).toBe(true);
  expect(lines.slice(1)).toEqual([
    { text: "short", cut: 0 },
    { text: "r".repeat(100_001), cut: 0 },
    { text: "st", cut: 0 },
  ]);
});

test("pullNow reads all the source holds now, past its 64 KiB buffer, and keeps what it holds of an open line though the buffer is reused", () => {
  const src = source();
  const lines: string[] = [];
  const splitter = new LineSplitter(1 << 20, src.pull);
  splitter.pullNow((l) => lines.push(l.text)); // nothing yet
  expect(lines).toEqual([]);
  const many = Array.from({ length: 3000 }, (_, i) => `line ${i} ${"x".repeat(40)}`);
  src.queue(`${many.join("\n")}\nopen `);
  splitter.pullNow((l) => lines.push(l.text));
  expect(lines.length).toBe(3000);
  expect(lines.at(-1)).toBe(many.at(-1)!);
  src.queue("y".repeat(70_000)); // overwrites the buffer "open " was read into
  splitter.pullNow((l) => lines.push(l.text));
  src.queue("z\n");
  splitter.pullNow((l) => lines.push(l.text));
  expect(lines.length).toBe(3001);
  expect(lines.at(-1)).toBe(`open ${"y".repeat(70_000)}z`);
  // Without a source, pullNow does nothing.
  new LineSplitter(1024).pullNow(() => lines.push("never"));
  expect(lines.length).toBe(3001);
});

test("an open line is read on from the source once 4096 bytes of it have come (not before), and never while a sink takes its bytes", () => {
  for (const [size, pulled] of [
    [4095, 0],
    [4096, 3],
  ] as const) {
    const src = source();
    src.queue("ab\n");
    const lines: Line[] = [];
    const splitter = new LineSplitter(1 << 20, src.pull);
    splitter.push(encode("c".repeat(size)), (l) => lines.push(l));
    expect(src.pulled).toBe(pulled);
  }
  const src = source();
  src.queue("ab\n");
  const written: number[] = [];
  const sink: LineSink = { write: (b) => void written.push(b.length), end: () => "from the sink", abort: () => {} };
  const lines: Line[] = [];
  const splitter = new LineSplitter(1 << 20, src.pull, { capOf: () => 1 << 20, sinkOf: () => sink, onOverflow: () => {} });
  splitter.push(encode("c".repeat(5000)), (l) => lines.push(l));
  expect(src.calls).toBe(0);
  splitter.push(encode("dd\n"), (l) => lines.push(l));
  expect(written).toEqual([5000, 2]);
  expect(lines).toEqual([{ text: "from the sink", cut: 0 }]);
});

test("a line's cap is asked only of lines over 4096 bytes, with at most their first 256 bytes, and is never above the splitter's own", () => {
  const asked: number[] = [];
  const limits: LineLimits = { capOf: (head) => (asked.push(head.length), 1 << 30), onOverflow: () => {} };
  expect(split([`${"a".repeat(4096)}\n`], 8192, limits)).toEqual([{ text: "a".repeat(4096), cut: 0 }]);
  expect(asked).toEqual([]);
  expect(split([`${"a".repeat(4097)}\n`], 8192, limits)).toEqual([{ text: "a".repeat(4097), cut: 0 }]);
  expect(asked).toEqual([HEAD_KEPT]);
  expect(split(["a".repeat(100), `${"a".repeat(9000)}\n`], 8192, limits)).toEqual([{ text: "a".repeat(HEAD_KEPT), cut: 9100 - HEAD_KEPT }]); // the splitter's 8192, not 1 GiB
  expect(asked).toEqual([HEAD_KEPT, 100]);
});

test("a sink takes a line's bytes as they come and hands over its line; past the cap it is aborted, and the overflow is told with the line's first bytes", () => {
  const events: string[] = [];
  const sink = (name: string): LineSink => ({
    write: (b) => void events.push(`${name} write ${b.length}`),
    end: () => (events.push(`${name} end`), `${name}'s line`),
    abort: () => void events.push(`${name} abort`),
  });
  let n = 0;
  const told: string[] = [];
  const limits: LineLimits = {
    capOf: () => 10_000,
    sinkOf: (head) => (head.length <= HEAD_KEPT && head[0] === 123 ? sink(`s${++n}`) : null),
    onOverflow: (head, seen, cap) => void told.push(`${Buffer.from(head).toString()}|${seen}|${cap}`),
  };
  const head = `{"id":1,${"h".repeat(300)}`;
  const lines = split([head, "x".repeat(3000), "y\n", "{", "z".repeat(12_000), "more", "\nplain", " text\n"], 1 << 20, limits);
  expect(lines).toEqual([
    { text: "s1's line", cut: 0 },
    { text: `{${"z".repeat(HEAD_KEPT - 1)}`, cut: 12_005 - HEAD_KEPT },
    { text: "plain text", cut: 0 },
  ]);
  expect(events).toEqual([`s1 write ${head.length}`, "s1 write 3000", "s1 write 1", "s1 end", "s2 write 1", "s2 abort"]);
  expect(told).toEqual([`{${"z".repeat(HEAD_KEPT - 1)}|12001|10000`]);
});

test("a runaway line is told once, when the bytes dropped of it first pass runawayAt: not at it", () => {
  const told: number[] = [];
  const limits: LineLimits = { capOf: () => 4096, onOverflow: () => {}, runawayAt: 10_000, onRunaway: (seen) => void told.push(seen) };
  const splitter = new LineSplitter(1 << 20, undefined, limits);
  const push = (n: number) => splitter.push(encode("w".repeat(n)), () => {});
  push(5000); // over the cap: 5000 seen
  push(5000); // 10000: at runawayAt, not past it
  expect(told).toEqual([]);
  push(1); // 10001
  expect(told).toEqual([10_001]);
  push(20_000);
  expect(told).toEqual([10_001]);
  // Exactly at runawayAt before a piece that passes it: told.
  const told2: number[] = [];
  const other = new LineSplitter(1 << 20, undefined, { ...limits, onRunaway: (seen) => void told2.push(seen) });
  other.push(encode("w".repeat(10_000)), () => {});
  other.push(encode("w".repeat(7)), () => {});
  expect(told2).toEqual([10_007]);
});

test("readLines hands over a last line with no newline, and none more after a newline", async () => {
  const stream = (...parts: string[]) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(encode(p));
        c.close();
      },
    });
  const out: string[] = [];
  await readLines(stream("a\nb", "c"), 100, (l) => out.push(l.text));
  await readLines(stream("d\n"), 100, (l) => out.push(l.text));
  expect(out).toEqual(["a", "bc", "d"]);
});

test("reading on from the source: a buffer grown past 1 MiB stops at the line's cap; a line already past 8 MiB is read on in chunks", () => {
  const MiB = 1 << 20;
  const capped = source();
  capped.queue("b".repeat(3 * MiB));
  const lines: Line[] = [];
  const splitter = new LineSplitter(1.5 * MiB, capped.pull);
  splitter.push(encode("a".repeat(5000)), (l) => lines.push(l));
  expect(capped.pulled).toBe(1.5 * MiB - 5000);
  splitter.push(encode("c\n"), (l) => lines.push(l));
  expect(lines.map((l) => [l.text.length, l.cut])).toEqual([[1.5 * MiB, 1]]);

  const long = source();
  long.queue("d".repeat(8 * MiB));
  const out: Line[] = [];
  const reader = new LineSplitter(64 * MiB, long.pull);
  reader.push(encode("e".repeat(5000)), (l) => out.push(l));
  expect(long.pulled).toBe(8 * MiB - 5000);
  reader.push(encode("g"), (l) => out.push(l)); // 8 MiB and one byte: not read on from the source
  expect(long.pulled).toBe(8 * MiB - 5000);
  reader.push(encode("\n"), (l) => out.push(l));
  expect(out.length).toBe(1);
  expect(out[0]!.text === "e".repeat(5000) + "d".repeat(8 * MiB - 5000) + "g").toBe(true);
});

test("limits with a runaway bound but no one to tell: the line is counted on, nothing thrown", () => {
  const lines = split(["x".repeat(5000), "y".repeat(20_000), "\nok\n"], 1 << 20, { capOf: () => 4096, onOverflow: () => {}, runawayAt: 10_000 });
  expect(lines).toEqual([
    { text: "x".repeat(HEAD_KEPT), cut: 25_000 - HEAD_KEPT },
    { text: "ok", cut: 0 },
  ]);
});
