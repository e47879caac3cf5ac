/**
 * Splits a byte stream into lines without ever holding more than `cap` bytes of one line: the head
 * of a longer line is kept, the rest counted in `cut`, and the stream goes on. Lines are handed
 * over synchronously, chunk by chunk, so a chunk of many replies costs one turn of the event loop.
 */

export interface Line {
  text: string;
  /** Bytes dropped from the end of this line because it was longer than the cap. */
  cut: number;
}

export class LineSplitter {
  private readonly decoder = new TextDecoder("utf-8", { fatal: false });
  private parts: Uint8Array[] = [];
  private size = 0;
  private cut = 0;

  constructor(private readonly cap: number) {}

  /** Feeds one chunk; calls `onLine` for every line it completes. */
  push(chunk: Uint8Array, onLine: (line: Line) => void): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      if (this.parts.length === 0 && this.cut === 0 && nl - start <= this.cap) {
        onLine({ text: this.decoder.decode(chunk.subarray(start, nl)), cut: 0 }); // the common case
      } else {
        this.take(chunk.subarray(start, nl));
        onLine(this.finish());
      }
      start = nl + 1;
    }
    if (start < chunk.length) this.take(chunk.slice(start)); // copied: the reader may reuse the chunk
  }

  /** Hands over what is left when the stream ends without a final newline. */
  end(onLine: (line: Line) => void): void {
    if (this.size > 0 || this.cut > 0) onLine(this.finish());
  }

  private take(piece: Uint8Array) {
    const room = this.cap - this.size;
    if (piece.length <= room) {
      this.parts.push(piece);
      this.size += piece.length;
    } else {
      if (room > 0) this.parts.push(piece.subarray(0, room));
      this.size = this.cap;
      this.cut += piece.length - Math.max(room, 0);
    }
  }

  private finish(): Line {
    const bytes = this.parts.length === 0 ? new Uint8Array(0) : this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    const line = { text: this.decoder.decode(bytes), cut: this.cut };
    this.parts = [];
    this.size = 0;
    this.cut = 0;
    return line;
  }
}

/** Reads a whole stream line by line. */
export async function readLines(stream: ReadableStream<Uint8Array>, cap: number, onLine: (line: Line) => void): Promise<void> {
  const splitter = new LineSplitter(cap);
  for await (const chunk of stream) splitter.push(chunk, onLine);
  splitter.end(onLine);
}
