/**
 * The delivery cap's preview (issue 41) at its edges: what is left as it is (no cap, not text, at
 * most the cap's bytes), how the cap is shared (the line, then two thirds of the rest as head),
 * and the characters a cut leaves at either end of spilled bytes, of every UTF-8 length.
 */
import { expect, test } from "bun:test";
import { deliver, deliverSpilled, omittedLine, utf8Head, utf8Tail } from "../../src/results/deliver.ts";
import type { JobResult } from "../../src/protocol/result.ts";
import { ResultStore } from "../../src/results/store.ts";
import { tempDir } from "../helpers.ts";

const origin = { plugin: "p", tool: "t" };
const result = (content: unknown): JobResult => ({ success: true, exitCode: 0, errorMessage: null, permissionDenied: false, decidedBy: null, output: { content, other: 1 }, logFile: null, durationMs: 1 });

test("no cap, a content that is not text, or text of at most the cap's bytes: the result as it is, nothing stored", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const long = "x".repeat(5000);
  for (const [content, cap] of [
    [long, undefined],
    [long, 0],
    [{ text: long }, 1024],
    [[long, long], 1024],
    [5, 1024],
    ["é".repeat(512), 1024], // 1024 bytes exactly
    ["x".repeat(1024), 1024],
  ] as const) {
    const given = result(content);
    expect(deliver(given, cap, store, origin)).toBe(given);
  }
  expect(store.scan().results).toEqual([]);
});

test("text over the cap by its bytes, however few its characters, is spilled: the line, then two thirds of the rest as head and the rest as tail", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  for (const content of ["é".repeat(513), "x".repeat(1025), "x".repeat(2000), "x".repeat(3072), "y".repeat(3073)]) {
    const delivered = deliver(result(content), 1024, store, origin);
    const spilled = delivered.spilled!;
    expect(spilled).toMatchObject({ truncated: true, bytes: Buffer.byteLength(content) });
    expect(store.text(spilled.ref)).toBe(content);
    const room = 1024 - Buffer.byteLength(omittedLine(spilled.bytes, spilled, spilled.bytes));
    const text = delivered.output.content as string;
    const head = utf8Head(content, Math.floor((room * 2) / 3));
    const tail = utf8Tail(content, room - Buffer.byteLength(head));
    expect(Buffer.byteLength(head)).toBeGreaterThan(Math.floor((room * 2) / 3) - 2);
    expect(text).toBe(head + omittedLine(spilled.bytes - Buffer.byteLength(head) - Buffer.byteLength(tail), spilled, Buffer.byteLength(head)) + tail);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1024);
    expect(delivered.output.other).toBe(1);
  }
});

test("head and tail of a short text: the whole text when the bytes allow it; a lone half of a surrogate pair is never kept", () => {
  expect(utf8Head("abc", 10)).toBe("abc");
  expect(utf8Tail("abc", 10)).toBe("abc");
  expect(utf8Head("abc", 3)).toBe("abc");
  expect(utf8Tail("abc", 3)).toBe("abc");
  expect(utf8Head("abc", 4)).toBe("abc");
  expect(utf8Tail("abc", 4)).toBe("abc");
  expect(utf8Tail("abc", 5)).toBe("abc");
  expect(utf8Head("é😀", 5)).toBe("é"); // 2 + 3 for the lone high half, which goes
  expect(utf8Tail("😀é", 5)).toBe("é");
  expect(utf8Head("😀a😀", 6)).toBe("😀a");
  expect(utf8Tail("😀a😀", 6)).toBe("a😀");
  expect(utf8Tail("😀😀", 7)).toBe("😀");
  expect(utf8Head("😀😀", 7)).toBe("😀");
});

test("spilled bytes cut inside a character of 2, 3 or 4 bytes (at each one's lowest lead byte too): the head ends and the tail starts at a whole one", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  // U+0080 (C2 80), U+0800 (E0 A0 80), U+10000 (F0 90 80 80), and others of each length.
  const chars = ["\u0080", "\u0800", "\u{10000}", "é", "漢", "😀", "a"];
  for (const char of chars) {
    for (let pad = 0; pad < 4; pad++) {
      const content = "a".repeat(pad) + char.repeat(2000);
      const bytes = Buffer.from(content);
      const stored = store.put(content, origin);
      for (const cap of [1024, 1025, 1026, 1027]) {
        const fromBytes = deliverSpilled(result(""), cap, stored, bytes.subarray(0, cap), bytes.subarray(bytes.length - cap));
        const fromText = deliver(result(content), cap, store, origin);
        expect(fromBytes.output.content).toBe(fromText.output.content as string);
        expect(fromBytes.output.content as string).not.toContain("\ufffd");
      }
    }
  }
});

test("bytes that are not UTF-8 at the tail's start: at most the three a cut can leave of a character are dropped, the rest shown as U+FFFD", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const stored = store.put("x".repeat(2000), origin);
  const last = Buffer.concat([Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]), Buffer.from("end")]);
  const delivered = deliverSpilled(result(""), 1024, stored, Buffer.from("x".repeat(1024)), last);
  const text = delivered.output.content as string;
  expect(text.endsWith("\ufffd\ufffdend")).toBe(true);
  expect(text.endsWith("\ufffd\ufffd\ufffdend")).toBe(false);
});
