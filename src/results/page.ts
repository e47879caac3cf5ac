/**
 * A page of a stored result, for a reader that takes text (`cxagent mcp`'s cxagent_read_result):
 * at most `length` bytes from `offset` (or the one character there, when `length` is shorter than
 * it), cut at whole UTF-8 characters, and where the next page starts, so that the pages joined
 * are the stored bytes exactly.
 */
import type { ResultStore } from "./store.ts";

export interface ResultPage {
  ref: string;
  /** The whole result's size in bytes. */
  bytes: number;
  /** Where this page starts and how many bytes it holds (whole characters). */
  offset: number;
  length: number;
  /** Where the next page starts, or null at the end. */
  next: number | null;
  plugin: string | null;
  tool: string | null;
  text: string;
}

export function readPage(store: ResultStore, ref: string, offset: number, length: number): ResultPage {
  // Up to 3 bytes skipped at the start, and the byte after the cut: 4 more than the page.
  const { bytes, info } = store.read(ref, offset, length + 4);
  let from = 0;
  // A page that starts inside a character begins at the next one.
  while (from < bytes.length && from < 3 && (bytes[from]! & 0xc0) === 0x80) from++;
  let to = Math.min(bytes.length, from + length);
  if (to < bytes.length) {
    // Back to the start of the character the cut falls in, unless the cut is between characters.
    while (to > from && (bytes[to]! & 0xc0) === 0x80) to--;
    // A length shorter than the character at the start: that one character, so the pages move on.
    if (to === from && length > 0) for (to++; to < bytes.length && (bytes[to]! & 0xc0) === 0x80; ) to++;
  }
  const start = Math.min(offset, info.bytes) + from;
  const end = Math.min(offset, info.bytes) + to;
  return { ref: info.ref, bytes: info.bytes, offset: start, length: end - start, next: end < info.bytes ? end : null, plugin: info.plugin ?? null, tool: info.tool ?? null, text: bytes.toString("utf8", from, to) };
}
