/**
 * The delivery cap (issue 41): what a caller gets of a result's output.content. Over the cap, the
 * whole text goes to the result store and the caller gets a head, one line saying how much was
 * left out and how to read the rest, and a tail, all within the cap, and the result carries
 * `spilled: {truncated, bytes, sha256, ref}`. The text spilled is exactly the text the caller
 * would have had (whatever the parent did to it on its way in, redaction included).
 */
import type { JobResult, Spilled } from "../protocol/result.ts";
import type { ResultOrigin, ResultStore, StoredResult } from "./store.ts";

/** The default cap where a model or a person reads the result (cxagent mcp, the CLI on a terminal). */
export const DELIVERY_CAP_DEFAULT = 100 * 1024;
/** No cap below this: the line alone takes some 300 bytes. */
export const DELIVERY_CAP_MIN = 1024;

/** The longest prefix of `text` whose UTF-8 is at most `bytes` (a whole character at a time). */
export function utf8Head(text: string, bytes: number): string {
  let s = text.slice(0, bytes);
  if (Buffer.byteLength(s) <= bytes) return s;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (Buffer.byteLength(text.slice(0, mid)) <= bytes) lo = mid;
    else hi = mid - 1;
  }
  s = text.slice(0, lo);
  return /[\ud800-\udbff]$/.test(s) ? s.slice(0, -1) : s;
}

/** The longest suffix of `text` whose UTF-8 is at most `bytes`. */
export function utf8Tail(text: string, bytes: number): string {
  let lo = 0;
  let hi = Math.min(text.length, bytes);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (Buffer.byteLength(text.slice(text.length - mid)) <= bytes) lo = mid;
    else hi = mid - 1;
  }
  const s = text.slice(text.length - lo);
  return /^[\udc00-\udfff]/.test(s) ? s.slice(1) : s;
}

/** The line between head and tail. */
export function omittedLine(left: number, spilled: Spilled, headBytes: number): string {
  return `\n[… ${left} of ${spilled.bytes} bytes left out. The whole result is ${spilled.ref} (SHA-256 ${spilled.sha256}); read the rest with \`cxagent result ${spilled.ref} --offset ${headBytes}\` or the cxagent_read_result tool, or pass the reference as a tool's argument …]\n`;
}

/** How the cap is shared: the line's length with the widest numbers it can hold, then two thirds of what is left as head. */
function shares(cap: number, stored: StoredResult): { spilled: Spilled; headBytes: number; room: number } {
  const spilled: Spilled = { truncated: true, bytes: stored.bytes, sha256: stored.sha256, ref: stored.ref };
  const room = Math.max(0, cap - Buffer.byteLength(omittedLine(stored.bytes, spilled, stored.bytes)));
  return { spilled, headBytes: Math.floor((room * 2) / 3), room };
}

function previewed(result: JobResult, spilled: Spilled, head: string, tail: string): JobResult {
  const headBytes = Buffer.byteLength(head);
  const left = spilled.bytes - headBytes - Buffer.byteLength(tail);
  return { ...result, output: { ...result.output, content: head + omittedLine(left, spilled, headBytes) + tail }, spilled };
}

/**
 * The result as delivered under `cap` bytes of output.content (none: as it is). A content that is
 * not text is left as it is.
 */
export function deliver(result: JobResult, cap: number | undefined, store: ResultStore, origin: ResultOrigin): JobResult {
  const content = result.output.content;
  if (!cap || typeof content !== "string" || content.length <= cap / 3 || Buffer.byteLength(content) <= cap) return result;
  const stored = store.put(content, origin);
  const { spilled, headBytes, room } = shares(cap, stored);
  const head = utf8Head(content, headBytes);
  return previewed(result, spilled, head, utf8Tail(content, room - Buffer.byteLength(head)));
}

/** The same for a content spilled while it was read (spill.ts): only its two ends are at hand, as bytes. */
export function deliverSpilled(result: JobResult, cap: number, stored: StoredResult, first: Buffer, last: Buffer): JobResult {
  const { spilled, headBytes, room } = shares(cap, stored);
  const head = utf8Complete(first.subarray(0, headBytes), "end");
  const tail = utf8Complete(last.subarray(Math.max(0, last.length - (room - Buffer.byteLength(head)))), "start");
  return previewed(result, spilled, head, tail);
}

/** Bytes cut from UTF-8 text as text, without the partial character the cut left at `where`. */
function utf8Complete(bytes: Buffer, where: "start" | "end"): string {
  let from = 0;
  let to = bytes.length;
  if (where === "start") {
    while (from < 3 && (bytes[from]! & 0xc0) === 0x80) from++; // (past the end: undefined, 0)
  } else {
    // The last character's first byte (before the start: none, 0), and whether all of it is here.
    // C0 and C1 never begin a character (they would spell it with more bytes than it needs).
    let at = to - 1;
    while ((bytes[at]! & 0xc0) === 0x80) at--;
    const lead = bytes[at] ?? 0;
    const want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 1;
    if (to - at < want) to = at;
  }
  return bytes.toString("utf8", from, to);
}
