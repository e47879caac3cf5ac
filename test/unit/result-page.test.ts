/** A page of a stored result (issue 41, cxagent_read_result): its fields, its bounds, and progress whatever the length. */
import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { readPage } from "../../src/results/page.ts";
import { ResultStore } from "../../src/results/store.ts";
import { tempDir } from "../helpers.ts";

test("from any offset, each page is whole characters, at most `length` bytes (or the one character there), and says where it starts, its length and the next page", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "a😀bé漢".repeat(50);
  const all = Buffer.from(text);
  const { ref } = store.put(text, { plugin: "p", tool: "t" });
  for (const length of [1, 2, 3, 4, 5, 6, 7, 9, 64]) {
    for (let offset = 0; offset < all.length; offset++) {
      const page = readPage(store, ref, offset, length);
      const bytes = Buffer.from(page.text);
      expect(page.text).not.toContain("\ufffd");
      expect(page.length).toBe(bytes.length);
      expect(page.length > 0 || page.offset === all.length).toBe(true); // empty only past the last character
      if (page.length) expect(page.length).toBeLessThanOrEqual(Math.max(length, Buffer.from(String.fromCodePoint(page.text.codePointAt(0)!)).length));
      expect(page.offset).toBeGreaterThanOrEqual(offset);
      expect(page.offset - offset).toBeLessThanOrEqual(3);
      expect(all.subarray(page.offset, page.offset + page.length).equals(bytes)).toBe(true);
      expect(page.next).toBe(page.offset + page.length < all.length ? page.offset + page.length : null);
      expect({ ref: page.ref, bytes: page.bytes, plugin: page.plugin, tool: page.tool }).toEqual({ ref, bytes: all.length, plugin: "p", tool: "t" });
    }
  }
  // Past the end: an empty last page.
  expect(readPage(store, ref, all.length + 10, 8)).toMatchObject({ offset: all.length, length: 0, next: null, text: "" });
  // A full page of 4-byte characters, cut exactly at one's end: no byte of the next.
  expect(readPage(store, ref, 1, 4)).toMatchObject({ offset: 1, length: 4, text: "😀", next: 5 });
  expect(readPage(store, ref, 2, 4)).toMatchObject({ offset: 5, length: 3, text: "bé", next: 8 });
});

test("pages of 1 to 3 bytes over 4-byte characters still move on, and join to the stored text", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "😀😀a😀";
  const { ref } = store.put(text, { plugin: "p", tool: "t" });
  for (const length of [1, 2, 3]) {
    let joined = "";
    let pages = 0;
    for (let offset: number | null = 0; offset !== null && pages < 20; pages++) {
      const page = readPage(store, ref, offset, length);
      joined += page.text;
      offset = page.next;
    }
    expect({ length, joined, pages }).toEqual({ length, joined: text, pages: 4 });
  }
});

test("a store without the origin file: plugin and tool are null", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { ref, sha256 } = store.put("some text", { plugin: "p", tool: "t" });
  rmSync(`${store.pathOf(sha256)}.json`);
  expect(readPage(store, ref, 0, 4)).toMatchObject({ offset: 0, length: 4, text: "some", plugin: null, tool: null, next: 4 });
});

test("bytes that are not UTF-8 (a run of continuation bytes): at most 3 skipped at a page's start, never a page that ends before it starts, and paging moves on to the end", () => {
  // (Text pages cannot carry such bytes; `cxagent result` gives them exactly.)
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const bytes = Buffer.concat([Buffer.from("ab"), Buffer.alloc(10, 0x80), Buffer.from("cd")]);
  const { ref } = store.put(bytes, { plugin: "p", tool: "t" });
  const page = readPage(store, ref, 2, 4);
  expect({ offset: page.offset, length: page.length, next: page.next }).toEqual({ offset: 5, length: 5, next: 10 });
  let pages = 0;
  for (let offset: number | null = 0; offset !== null && pages < 20; pages++) {
    const p = readPage(store, ref, offset, 4);
    expect(p.offset - offset).toBeLessThanOrEqual(3);
    expect(p.length).toBeGreaterThanOrEqual(0);
    expect(p.next === null || p.next > offset).toBe(true);
    offset = p.next;
  }
  expect(pages).toBeLessThan(20);
});

test("a page of length 0 is empty, and says the next page starts where it does", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { ref } = store.put("😀abc", { plugin: "p", tool: "t" });
  expect(readPage(store, ref, 0, 0)).toMatchObject({ offset: 0, length: 0, text: "", next: 0 });
});
