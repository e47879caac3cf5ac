/**
 * The spill while reading (issue 41). With a delivery cap set, a reply line that does not arrive
 * in one read is not held whole: its bytes stream through this sink as they come. It keeps the
 * line's JSON with `result.output.content` emptied (the skeleton, which the connection parses as
 * the reply), and decodes that string's JSON escapes on the fly, writing the text to the result
 * store's temp file while keeping only its first `cap` bytes and its last `cap` bytes in memory.
 * So a 50 MB answer costs the parent the cap, twice, and the chunk being read, not 50 MB thrice.
 *
 * The text written is the text JSON.parse would have given (escapes decoded, a lone surrogate as
 * U+FFFD, as Buffer's UTF-8 encoding makes it). A string that appears twice at that path (a
 * duplicate key, whose last value JSON.parse keeps; keys are read with their escapes decoded, as
 * JSON.parse reads them) is left to the skeleton, and nothing is stored. A store that cannot be
 * written fails a content over the cap with its E_STATE (one within the cap is kept whole anyway).
 *
 * Where a plugin's text passes a redactor on its way in (issue 40), the decoded text goes through
 * that redactor's stream (`redact`) before anything is kept or written: the store, the head and
 * the tail only ever hold the redacted text, which is what the caller would have had.
 */
import type { ResultOrigin, ResultStore, ResultWriter, StoredResult } from "./store.ts";

/** What a line sink is to the line splitter (host/lines.ts LineSink has the same shape). */
export interface Sink {
  write(bytes: Uint8Array): void;
  /** The line as the reader should parse it. */
  end(): string;
  /** The line will not be read (it passed its read cap): what was written goes. */
  abort(): void;
}

const EMPTY = Buffer.alloc(0);
const QUOTE = 34;
const BACKSLASH = 92;
/** What is kept of a key: more than any key looked for takes, written with every escape (6 bytes a character). */
const KEY_KEPT = 64;
const SIMPLE_ESCAPES: Record<number, number> = { 110: 10, 116: 9, 114: 13, 98: 8, 102: 12, 34: 34, 92: 92, 47: 47 };

/** A redactor's stream (secrets/redact.ts StreamRedactor): what of each piece can go out now, and what it held at the end. */
export interface TextStream {
  push(text: string): string;
  end(): string;
}

/** What the spill found once its line ended. */
export type SpillOutcome = { kind: "whole"; text: string } | { kind: "spilled"; stored: StoredResult; head: Buffer; tail: Buffer };

export class ContentSpill implements Sink {
  private readonly skeleton: Buffer[] = [];
  /** Containers open: 0 an object, 1 an array; the key last read at each depth (1-based). */
  private readonly stack: number[] = [];
  private readonly keys: string[] = [];
  private expectKey = false;
  private inString = false;
  private escaped = false;
  private key: number[] | null = null;
  private spilling = false;
  private found = false;
  private duplicate = false;
  private discarded = false;
  private writer: ResultWriter | null = null;
  /** Why the store could not be begun, if it could not: a content over the cap then fails the call. */
  private failure: unknown = null;
  // Made when the content begins: a call whose reply arrives in one read (most) costs none of it.
  private head: Buffer = EMPTY;
  private headLength = 0;
  private ring: Buffer = EMPTY;
  private ringAt = 0;
  private total = 0;
  private out: Buffer = EMPTY;
  private outLength = 0;
  /** Content escapes: 0 none, 1 after a backslash, 2 to 5 reading \u's hex digits. */
  private esc = 0;
  private hex = 0;
  private high = 0;

  private readonly decoder: TextDecoder | null;

  constructor(
    private readonly store: ResultStore,
    readonly cap: number,
    private readonly redact?: TextStream,
  ) {
    this.decoder = redact ? new TextDecoder("utf-8") : null;
  }

  write(chunk: Uint8Array): void {
    const n = chunk.length;
    let i = 0;
    let from = 0; // the start of the run of skeleton bytes not yet kept
    // The next quote and backslash at or after where they were last looked for (n: none in the chunk).
    let nextQuote = -1;
    let nextBackslash = -1;
    const special = (at: number) => {
      if (nextQuote < at) nextQuote = indexOrEnd(chunk, QUOTE, at);
      if (nextBackslash < at) nextBackslash = indexOrEnd(chunk, BACKSLASH, at);
      return Math.min(nextQuote, nextBackslash);
    };
    while (i < n) {
      if (this.spilling) {
        i = this.content(chunk, i, special);
        if (i < n) {
          this.spilling = false; // i is the closing quote: the skeleton gets it
          this.flushOut();
          from = i;
          i++;
        }
        continue;
      }
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          if (this.key && this.key.length < KEY_KEPT) this.key.push(chunk[i]!);
          i++;
          continue;
        }
        const at = special(i);
        if (this.key && this.key.length < KEY_KEPT) for (let k = i; k < at && this.key.length < KEY_KEPT; k++) this.key.push(chunk[k]!);
        if (at >= n) break;
        i = at + 1;
        if (chunk[at] === BACKSLASH) {
          this.escaped = true;
          if (this.key && this.key.length < KEY_KEPT) this.key.push(BACKSLASH);
          continue;
        }
        this.inString = false;
        if (this.key) {
          this.keys[this.stack.length] = keyText(this.key);
          this.key = null;
        }
        continue;
      }
      const byte = chunk[i]!;
      i++;
      switch (byte) {
        case QUOTE:
          if (this.stack.at(-1) === 0 && this.expectKey) {
            this.inString = true;
            this.key = [];
          } else if (this.isContent()) {
            if (this.found) {
              this.duplicate = true;
              this.inString = true;
            } else {
              this.found = true;
              this.keep(chunk, from, i); // up to and with the opening quote
              this.spilling = true;
              this.startContent();
            }
          } else {
            this.inString = true;
          }
          break;
        case 123: // {
          this.stack.push(0);
          this.expectKey = true;
          break;
        case 91: // [
          this.stack.push(1);
          break;
        case 125: // }
        case 93: // ]
          this.stack.pop();
          break;
        case 58: // :
          this.expectKey = false;
          break;
        case 44: // ,
          if (this.stack.at(-1) === 0) this.expectKey = true;
          break;
      }
    }
    if (!this.spilling) this.keep(chunk, from, n);
  }

  private isContent(): boolean {
    return this.stack.length === 3 && this.stack[0] === 0 && this.stack[1] === 0 && this.stack[2] === 0 && this.keys[1] === "result" && this.keys[2] === "output" && this.keys[3] === "content";
  }

  private keep(chunk: Uint8Array, from: number, to: number) {
    if (to > from) this.skeleton.push(Buffer.from(chunk.subarray(from, to)));
  }

  private startContent() {
    this.head = Buffer.allocUnsafe(this.cap);
    this.ring = Buffer.allocUnsafe(this.cap);
    this.out = Buffer.allocUnsafe(256 << 10);
    if (this.discarded) return;
    try {
      this.writer = this.store.begin();
    } catch (error) {
      this.writer = null; // the store cannot be written: outcome() says so, if the content passes the cap
      this.failure = error;
    }
  }

  /** Decodes content from `i`; returns the index of its closing quote, or the chunk's length. */
  private content(chunk: Uint8Array, i: number, special: (at: number) => number): number {
    const n = chunk.length;
    while (i < n) {
      if (this.esc === 0) {
        const at = special(i);
        if (at > i) this.emit(chunk, i, at);
        if (at >= n) return n;
        if (chunk[at] === QUOTE) {
          this.loneHigh();
          this.endText();
          return at;
        }
        this.esc = 1;
        i = at + 1;
        continue;
      }
      const byte = chunk[i++]!;
      if (this.esc === 1) {
        if (byte === 117) {
          this.esc = 2;
          this.hex = 0;
          continue;
        }
        this.esc = 0;
        this.emitByte(SIMPLE_ESCAPES[byte] ?? byte); // (emit ends a lone high surrogate first)
        continue;
      }
      this.hex = this.hex * 16 + hexValue(byte);
      if (++this.esc === 6) {
        this.esc = 0;
        this.codeUnit(this.hex);
      }
    }
    return n;
  }

  private codeUnit(unit: number) {
    if (unit >= 0xd800 && unit <= 0xdbff) {
      this.loneHigh();
      this.high = unit;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      const high = this.high;
      this.high = 0;
      this.codePoint(high ? 0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00) : 0xfffd);
    } else {
      this.codePoint(unit);
    }
  }

  private loneHigh() {
    if (this.high) {
      this.high = 0;
      this.codePoint(0xfffd);
    }
  }

  private codePoint(cp: number) {
    const b = Buffer.from(String.fromCodePoint(cp), "utf8");
    this.emit(b, 0, b.length);
  }

  private emitByte(byte: number) {
    this.emit(Uint8Array.of(byte), 0, 1);
  }

  /** Decoded bytes of the content: through the redactor when there is one, then kept and written. */
  private emit(bytes: Uint8Array, from: number, to: number) {
    this.loneHigh();
    if (!this.redact) return this.put(bytes, from, to);
    this.putText(this.redact.push(this.decoder!.decode(bytes.subarray(from, to), { stream: true })));
  }

  /** The content has ended: what the decoder and the redactor held goes out. */
  private endText() {
    if (this.redact) this.putText(this.redact.push(this.decoder!.decode()) + this.redact.end());
  }

  private putText(text: string) {
    if (!text) return;
    const bytes = Buffer.from(text, "utf8");
    this.put(bytes, 0, bytes.length);
  }

  private put(bytes: Uint8Array, from: number, to: number) {
    const length = to - from;
    // The head: the first `cap` bytes; the ring: the last `cap` bytes.
    if (this.headLength < this.cap) {
      const take = Math.min(length, this.cap - this.headLength);
      this.head.set(bytes.subarray(from, from + take), this.headLength);
      this.headLength += take;
    }
    const last = Math.min(length, this.cap);
    let src = to - last;
    while (src < to) {
      const room = Math.min(this.cap - this.ringAt, to - src);
      this.ring.set(bytes.subarray(src, src + room), this.ringAt);
      this.ringAt = (this.ringAt + room) % this.cap;
      src += room;
    }
    this.total += length;
    if (!this.writer) return;
    if (this.outLength + length > this.out.length) this.flushOut();
    if (length >= this.out.length) this.writer.write(bytes.subarray(from, to));
    else {
      this.out.set(bytes.subarray(from, to), this.outLength);
      this.outLength += length;
    }
  }

  private flushOut() {
    if (this.writer && this.outLength) this.writer.write(this.out.subarray(0, this.outLength));
    this.outLength = 0;
  }

  end(): string {
    return Buffer.concat(this.skeleton).toString("utf8");
  }

  abort(): void {
    this.discard();
  }

  /** The call will not take the outcome (it failed): what was written goes; later bytes are only parsed. */
  discard(): void {
    this.discarded = true;
    this.writer?.abort();
    this.writer = null;
  }

  /** Once the line has ended: the content whole (within the cap), or stored and its two ends; null when there is none to take. */
  outcome(origin: ResultOrigin): SpillOutcome | null {
    if (!this.found || this.duplicate || this.spilling || this.discarded) {
      this.discard();
      return null;
    }
    if (this.total <= this.cap) {
      this.discard();
      return { kind: "whole", text: this.head.toString("utf8", 0, this.total) };
    }
    // (what was buffered went out at the content's closing quote)
    const writer = this.writer;
    this.writer = null;
    if (!writer) throw this.failure; // the store's E_STATE
    const stored = writer.finish(origin);
    const tail = Buffer.concat([this.ring.subarray(this.ringAt), this.ring.subarray(0, this.ringAt)]);
    return { kind: "spilled", stored, head: this.head, tail };
  }
}

/** A key as JSON.parse reads it, escapes decoded; one cut short (KEY_KEPT) that does not parse, as it came: it is none looked for. */
function keyText(bytes: number[]): string {
  const raw = Buffer.from(bytes).toString("utf8");
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

function indexOrEnd(chunk: Uint8Array, byte: number, from: number): number {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? chunk.length : at;
}

function hexValue(byte: number): number {
  if (byte >= 48 && byte <= 57) return byte - 48;
  if (byte >= 97 && byte <= 102) return byte - 87;
  if (byte >= 65 && byte <= 70) return byte - 55;
  return 0;
}
