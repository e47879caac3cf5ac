/**
 * Splits a byte stream into lines without ever holding more than `cap` bytes of one line: the head
 * of a longer line is kept, the rest counted in `cut`, and the stream goes on. Lines are handed
 * over synchronously, chunk by chunk, so a chunk of many replies costs one turn of the event loop.
 *
 * Big lines cost three passes over their bytes here: joining their chunks, decoding them, and the
 * caller's JSON.parse. Chunks are kept as they came, not copied: a stream's default reader hands
 * each chunk over to its reader for good. Given a `pull` that reads the source directly, a line
 * still open after a chunk is read on straight into the buffer it is joined in (see drain), so
 * its bytes after that chunk are neither copied into chunks of their own nor joined. Buffer's
 * UTF-8 decoding is used rather than a TextDecoder's: it makes one-byte strings of ASCII text,
 * which JSON.parse reads about a third faster (measured on Bun 1.4.5: 1 MiB, 170 µs against
 * 240 µs); invalid bytes become U+FFFD alike.
 */

export interface Line {
  text: string;
  /** Bytes dropped from the end of this line because it was longer than the cap. */
  cut: number;
}

/**
 * A cap per line, and word of a line going over it while it is still being read (issue 41: the
 * read cap). `capOf` is asked once per line over SMALL_LINE bytes, with the line's first bytes,
 * and answers that line's cap (at most the splitter's own). `onOverflow` is told at once when a
 * line passes its cap, with its head (at most HEAD_KEPT bytes, all that is kept of it from then
 * on), how many bytes had arrived and the cap; `onRunaway` when the bytes dropped of one line
 * pass `runawayAt` (a line no plugin host's writer would write: the stream cannot be read on).
 */
export interface LineLimits {
  capOf(head: Uint8Array): number;
  /**
   * Where the bytes of a line that does not end in its first read go instead of being kept (the
   * spill while reading, issue 41): null to keep them. Its `end()` is the line handed over.
   */
  sinkOf?(head: Uint8Array): LineSink | null;
  onOverflow(head: Uint8Array, seen: number, cap: number): void;
  runawayAt?: number;
  onRunaway?(seen: number): void;
}

/** Takes a line's bytes as they arrive (see LineLimits.sinkOf). */
export interface LineSink {
  write(bytes: Uint8Array): void;
  end(): string;
  abort(): void;
}

export class LineSplitter {
  private parts: Uint8Array[] = [];
  /**
   * Where the chunks of a long line are joined. It is kept (up to SCRATCH_MAX) because new
   * memory costs page faults and garbage: joining 1 MiB took 48 µs of CPU into new memory and
   * 17 µs into memory already touched, and in a loop of 1 MiB replies the parent's CPU per reply
   * fell from about 740 to 570 µs (Bun 1.4.5, the 2-vCPU VM).
   */
  private scratch: Buffer | null = null;
  /** What pullNow reads into, kept from read to read. */
  private window: Buffer | null = null;
  private size = 0;
  private cut = 0;
  /** The open line's cap (its limits' capOf, else the splitter's). */
  private lineCap: number;
  /** Where the open line's bytes go, when not kept (sinkOf). */
  private sink: LineSink | null = null;

  /**
   * `pull`, if given, reads what the source has now into `into` without waiting: the number of
   * bytes read, or 0 or less when it has nothing now, has ended or failed (the source's own
   * reader then sees that as it would have).
   */
  constructor(
    private readonly cap: number,
    private readonly pull?: (into: Uint8Array) => number,
    private readonly limits?: LineLimits,
  ) {
    this.lineCap = cap;
  }

  /** The cap of a line that begins with `head` (issue 41): the limits' answer, at most the splitter's cap. */
  private capFor(head: Uint8Array): number {
    return this.limits ? Math.min(this.cap, this.limits.capOf(head.subarray(0, HEAD_KEPT))) : this.cap;
  }

  /**
   * Feeds one chunk; calls `onLine` for every line it completes. A `transient` chunk's memory is
   * reused by the caller once this returns: what is kept of it is copied.
   */
  push(chunk: Uint8Array, onLine: (line: Line) => void, transient = false): void {
    let start = 0;
    let view: Buffer | null = null;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const length = nl - start;
      if (this.parts.length === 0 && this.cut === 0 && length <= (length <= SMALL_LINE ? this.cap : this.capFor(chunk.subarray(start, nl)))) {
        view ??= asBuffer(chunk);
        onLine({ text: view.toString("utf8", start, nl), cut: 0 }); // the common case
      } else {
        this.take(chunk.subarray(start, nl));
        onLine(this.finish());
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.take(transient ? Buffer.from(chunk.subarray(start)) : chunk.subarray(start)); // (a Buffer's slice would not copy)
      if (this.pull && this.cut === 0 && !this.sink && this.size >= DRAIN_FROM) this.drain(onLine);
    }
  }

  /**
   * Reads what the source (`pull`) holds now and hands over its lines, at once: for a reader that
   * knows data has arrived and need not wait for the source's own read. Reads into a buffer kept
   * for this, so what is kept of each read is copied (push's `transient`).
   */
  pullNow(onLine: (line: Line) => void): void {
    if (!this.pull) return;
    this.window ??= Buffer.allocUnsafeSlow(PULL_NOW_BYTES);
    for (;;) {
      const got = this.pull(this.window);
      if (got <= 0) return;
      this.push(this.window.subarray(0, got), onLine, true);
      if (got < this.window.length) return;
    }
  }

  /**
   * Reads the open line on from the source, straight into the scratch buffer after its head, until
   * its newline, until the source has nothing more for now, or until the buffer may grow no more
   * (SCRATCH_MAX, or the cap: what comes after is read as chunks again, and a line over the cap is
   * cut there as usual). A 1 MiB reply arrives in a 512 KiB chunk or less and the rest: the copy
   * of the rest into a chunk of its own and the join are saved.
   */
  private drain(onLine: (line: Line) => void): void {
    const limit = Math.min(this.lineCap, SCRATCH_MAX);
    if (this.size >= limit) return;
    let filled = this.size;
    let buffer = this.room(filled, Math.min(limit, Math.max(2 * filled, 1 << 20)), false);
    for (;;) {
      if (filled === buffer.length) {
        if (filled >= limit) break;
        buffer = this.room(filled, Math.min(limit, 2 * filled), true);
      }
      const got = this.pull!(buffer.subarray(filled));
      if (got <= 0) break;
      const nl = buffer.subarray(0, filled + got).indexOf(10, filled);
      filled += got;
      if (nl >= 0) {
        const rest = nl + 1 < filled ? Buffer.from(buffer.subarray(nl + 1, filled)) : null;
        this.parts = [];
        this.size = 0;
        onLine({ text: buffer.toString("utf8", 0, nl), cut: 0 });
        if (rest) this.push(rest, onLine);
        return;
      }
    }
    this.parts = [buffer.subarray(0, filled)];
    this.size = filled;
  }

  /**
   * The scratch buffer, at least `want` bytes long, holding the open line's first `filled` bytes:
   * copied from its parts, or (`kept`) from the scratch buffer this replaces.
   */
  private room(filled: number, want: number, kept: boolean): Buffer {
    const old = this.scratch;
    if (!old || old.length < want) this.scratch = Buffer.allocUnsafeSlow(want);
    const scratch = this.scratch!;
    if (kept) {
      if (scratch !== old) scratch.set(old!.subarray(0, filled));
    } else {
      let at = 0;
      for (const part of this.parts) {
        if (!isAt(part, scratch, at)) scratch.set(part, at);
        at += part.length;
      }
    }
    return scratch;
  }

  /** Hands over what is left when the stream ends without a final newline. */
  end(onLine: (line: Line) => void): void {
    if (this.size > 0 || this.cut > 0) onLine(this.finish());
  }

  private join(): Uint8Array {
    if (this.size > SCRATCH_MAX) return Buffer.concat(this.parts, this.size);
    if (!this.scratch || this.scratch.length < this.size) this.scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(this.size, 2 * (this.scratch?.length ?? 32 << 10))));
    let at = 0;
    for (const part of this.parts) {
      if (!isAt(part, this.scratch, at)) this.scratch.set(part, at);
      at += part.length;
    }
    return this.scratch.subarray(0, at);
  }

  private take(piece: Uint8Array) {
    if (this.cut > 0) {
      // Past the cap: counted, never kept; a line that runs on past any a host writes is reported once.
      const before = this.size + this.cut;
      this.cut += piece.length;
      const at = this.limits?.runawayAt;
      if (at !== undefined && before <= at && this.size + this.cut > at) this.limits!.onRunaway?.(this.size + this.cut);
      return;
    }
    if (this.size === 0) {
      this.lineCap = this.capFor(piece);
      this.sink = this.limits?.sinkOf?.(piece.subarray(0, HEAD_KEPT)) ?? null;
    }
    if (this.size + piece.length <= this.lineCap) {
      // With a sink only the line's first bytes are kept (to name its call, should it pass its cap).
      if (this.sink) {
        if (this.size === 0) this.parts.push(Buffer.from(piece.subarray(0, HEAD_KEPT)));
        this.sink.write(piece);
      } else {
        this.parts.push(piece);
      }
      this.size += piece.length;
      return;
    }
    this.sink?.abort();
    this.sink = null;
    // Over the cap: from now on only the head is kept (with limits, HEAD_KEPT bytes: the memory
    // held drops at once), and the reader is told now, not when a line end comes (it may never come).
    const seen = this.size + piece.length;
    const head = Buffer.alloc(Math.min(this.limits ? HEAD_KEPT : this.lineCap, this.lineCap, seen));
    let at = 0;
    for (const part of [...this.parts, piece]) {
      head.set(part.subarray(0, head.length - at), at); // (once full: nothing more)
      at += Math.min(part.length, head.length - at);
    }
    this.parts = [head];
    this.size = head.length;
    this.cut = seen - head.length;
    this.limits?.onOverflow(head, seen, this.lineCap);
  }

  private finish(): Line {
    const sink = this.sink;
    this.sink = null;
    const bytes = sink ? null : this.parts.length === 0 ? new Uint8Array(0) : this.parts.length === 1 ? this.parts[0]! : this.join();
    const line = { text: sink ? sink.end() : asBuffer(bytes!).toString("utf8"), cut: this.cut };
    this.parts = [];
    this.size = 0;
    this.cut = 0; // (the next line's cap is asked when its first bytes come: take)
    return line;
  }
}

/** Lines up to this size are never asked their cap (so no cap is below it: MIN_LINE_CAP). */
const SMALL_LINE = 4 << 10;
export const MIN_LINE_CAP = SMALL_LINE;
/** What is kept of a line over its cap: enough to name its call. */
export const HEAD_KEPT = 256;
/** Lines up to this size are joined in a buffer kept from line to line. */
const SCRATCH_MAX = 8 << 20;
/** What pullNow reads at most per pull: far more than a batch of small replies. */
const PULL_NOW_BYTES = 64 << 10;
/** An open line is read on straight from the source (given `pull`) once this much of it has come. */
const DRAIN_FROM = 4 << 10;

/** Whether `part` is already the bytes of `buffer` at `at` (what drain left there). */
const isAt = (part: Uint8Array, buffer: Uint8Array, at: number) => part.buffer === buffer.buffer && part.byteOffset === buffer.byteOffset + at;

const asBuffer = (bytes: Uint8Array) => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/** Reads a whole stream line by line. */
export async function readLines(stream: ReadableStream<Uint8Array>, cap: number, onLine: (line: Line) => void, limits?: LineLimits): Promise<void> {
  const splitter = new LineSplitter(cap, undefined, limits);
  for await (const chunk of stream) splitter.push(chunk, onLine);
  splitter.end(onLine);
}
