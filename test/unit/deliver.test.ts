/** The delivery cap's preview (issue 41): within the cap, whole characters, the same from a string and from spilled bytes; pages join to the stored bytes. */
import { expect, test } from "bun:test";
import { deliver, deliverSpilled, utf8Head, utf8Tail } from "../../src/results/deliver.ts";
import { readPage } from "../../src/results/page.ts";
import { ResultStore } from "../../src/results/store.ts";
import type { JobResult } from "../../src/protocol/result.ts";
import { tempDir } from "../helpers.ts";

const result = (content: string): JobResult => ({ success: true, exitCode: 0, errorMessage: null, permissionDenied: false, decidedBy: null, output: { content, other: 1 }, logFile: null, durationMs: 1 });
const text = Array.from({ length: 20_000 }, (_, i) => ["a", "é", "漢", "😀"][i % 4]).join("");

test("head and tail are whole characters within their bytes", () => {
  for (let n = 0; n < 12; n++) {
    expect(Buffer.byteLength(utf8Head(text, n))).toBeLessThanOrEqual(n);
    expect(Buffer.byteLength(utf8Tail(text, n))).toBeLessThanOrEqual(n);
    expect(text.startsWith(utf8Head(text, n))).toBe(true);
    expect(text.endsWith(utf8Tail(text, n))).toBe(true);
  }
  expect(utf8Head(text, 10)).toBe("aé漢😀"); // 1 + 2 + 3 + 4 bytes
  expect(utf8Head(text, 9)).toBe("aé漢");
  expect(utf8Tail(text, 9)).toBe("é漢😀");
  expect(utf8Tail(text, 8)).toBe("漢😀");
});

test("the preview from a string and from spilled bytes: the same text, within the cap, no broken character", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  for (const cap of [1024, 1500, 4099]) {
    const fromText = deliver(result(text), cap, store, { plugin: "p", tool: "t" });
    const content = fromText.output.content as string;
    expect(Buffer.byteLength(content)).toBeLessThanOrEqual(cap);
    expect(content).not.toContain("\ufffd");
    expect(fromText.output.other).toBe(1);
    const bytes = Buffer.from(text);
    const fromBytes = deliverSpilled(result(""), cap, store.put(text, { plugin: "p", tool: "t" }), bytes.subarray(0, cap), bytes.subarray(bytes.length - cap));
    expect(fromBytes.output.content).toBe(content);
    expect(fromBytes.spilled).toEqual(fromText.spilled!);
  }
  expect(deliver(result("short"), 1024, store, { plugin: "p", tool: "t" }).spilled).toBeUndefined();
});

test("pages of any length join to the stored bytes exactly, each whole characters", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const short = text.slice(0, 300);
  const { ref } = store.put(short, { plugin: "p", tool: "t" });
  for (const length of [4, 5, 7, 100]) {
    let joined = "";
    let offset: number | null = 0;
    while (offset !== null) {
      const page = readPage(store, ref, offset, length);
      expect(page.offset).toBe(offset);
      expect(page.text).not.toContain("\ufffd");
      joined += page.text;
      offset = page.next;
    }
    expect(joined).toBe(short);
  }
  expect(readPage(store, ref, 2, 10).offset).toBe(3); // inside "é": from the next character
});
