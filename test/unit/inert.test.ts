import { expect, test } from "bun:test";
import { inert, inertBlock } from "../../src/inert.ts";

test("one-line text: every control, invisible and reordering character is shown, not acted on", () => {
  expect(inert("plain text, ünïcödé and 🙂 pass through")).toBe("plain text, ünïcödé and 🙂 pass through");
  expect(inert("\x1b[2J\x1b]0;title\x07")).toBe("\\x1b[2J\\x1b]0;title\\x07");
  expect(inert("a\nb\r\tc\x00\x7f")).toBe("a\\nb\\r\\tc\\x00\\x7f");
  expect(inert("\u009b31m C1 CSI")).toBe("\\x9b31m C1 CSI");
  expect(inert("file\u202etxt.exe \u2066x\u2069 \u200e\u200f\u061c")).toBe("file\\u202etxt.exe \\u2066x\\u2069 \\u200e\\u200f\\u061c");
  expect(inert("zero\u200bwidth\u200d\u2060\ufeff, lines\u2028\u2029")).toBe("zero\\u200bwidth\\u200d\\u2060\\ufeff, lines\\u2028\\u2029");
});

test("multi-line text keeps its newlines and tabs, and nothing else", () => {
  expect(inertBlock("line one\n\tline two\r\nline three")).toBe("line one\n\tline two\nline three");
  expect(inertBlock("overwrite\rfake")).toBe("overwrite\\rfake");
  expect(inertBlock("\x1b[31mred\x1b[0m \u202eevil")).toBe("\\x1b[31mred\\x1b[0m \\u202eevil");
  // joiners stay in blocks, where emoji sequences use them
  expect(inertBlock("👩\u200d💻")).toBe("👩\u200d💻");
});

/** Every code point from `from` to `to`, inclusive. */
const span = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String.fromCharCode(from + i));
const LINE_ESCAPED = [[0x00, 0x1f], [0x7f, 0x9f], [0x61c, 0x61c], [0x200b, 0x200f], [0x2028, 0x202e], [0x2060, 0x2060], [0x2066, 0x2069], [0xfeff, 0xfeff]].flatMap(([a, b]) => span(a!, b!));
const BLOCK_ESCAPED = [[0x00, 0x08], [0x0b, 0x1f], [0x7f, 0x9f], [0x61c, 0x61c], [0x200e, 0x200f], [0x202a, 0x202e], [0x2066, 0x2069]].flatMap(([a, b]) => span(a!, b!));
/** Just outside each range: shown as they are. */
const LINE_KEPT = [0x20, 0x7e, 0xa0, 0x61b, 0x61d, 0x200a, 0x2010, 0x2027, 0x202f, 0x205f, 0x2061, 0x2065, 0x206a, 0xfefe, 0xff00].map((c) => String.fromCharCode(c));
const BLOCK_KEPT = ["\t", "\n", "\u200b", "\u200d", "\u2028", "\u2029", "\u2060", "\ufeff", ...LINE_KEPT];

test("each hostile character alone on a line is escaped (U+202E with nothing else included); its neighbours outside the ranges are not", () => {
  for (const c of LINE_ESCAPED) expect(inert(`a${c}b`)).toBe(`a${escaped(c)}b`);
  for (const c of BLOCK_ESCAPED) expect(inertBlock(`a${c}b`)).toBe(`a${escaped(c)}b`);
  for (const c of LINE_KEPT) expect(inert(`a${c}b`)).toBe(`a${c}b`);
  for (const c of BLOCK_KEPT) expect(inertBlock(`a${c}b`)).toBe(`a${c}b`);
  // and beside a character that is escaped, so the whole text is rewritten
  for (const c of LINE_KEPT) expect(inert(`a${c}b\x07`)).toBe(`a${c}b\\x07`);
  for (const c of BLOCK_KEPT) expect(inertBlock(`a${c}b\x07`)).toBe(`a${c}b\\x07`);
  expect(inert("\u202e")).toBe("\\u202e");
  expect(inertBlock("\u202e")).toBe("\\u202e");
});

function escaped(c: string): string {
  const named: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
  const code = c.charCodeAt(0);
  return named[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`);
}
