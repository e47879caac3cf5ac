/**
 * The delivery cap (issue 41): what a caller gets of a result's output.content. Over the cap, the
 * whole text goes to the result store and the caller gets a head, one line saying how much was
 * left out and how to read the rest, and a tail, all within the cap, and the result carries
 * `spilled: {truncated, bytes, sha256, ref}`. The text spilled is exactly the text the caller
 * would have had (whatever the parent did to it on its way in, redaction included).
 */
import type { JobResult, Spilled } from "../protocol/result.ts";
import type { ResultOrigin, ResultStore } from "./store.ts";

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

/**
 * The result as delivered under `cap` bytes of output.content (none: as it is). A content that is
 * not text is left as it is.
 */
export function deliver(result: JobResult, cap: number | undefined, store: ResultStore, origin: ResultOrigin): JobResult {
  const content = result.output.content;
  if (!cap || typeof content !== "string" || content.length <= cap / 3 || Buffer.byteLength(content) <= cap) return result;
  const stored = store.put(content, origin);
  const spilled: Spilled = { truncated: true, bytes: stored.bytes, sha256: stored.sha256, ref: stored.ref };
  // The line's length with the widest numbers it can hold, then two thirds of what is left as head.
  const room = Math.max(0, cap - Buffer.byteLength(omittedLine(stored.bytes, spilled, stored.bytes)));
  const head = utf8Head(content, Math.floor((room * 2) / 3));
  const headBytes = Buffer.byteLength(head);
  const tail = utf8Tail(content, room - headBytes);
  const left = stored.bytes - headBytes - Buffer.byteLength(tail);
  return { ...result, output: { ...result.output, content: head + omittedLine(left, spilled, headBytes) + tail }, spilled };
}
