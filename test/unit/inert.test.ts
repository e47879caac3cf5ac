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
