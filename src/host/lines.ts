/**
 * Splits a byte stream into lines without ever holding more than `cap` bytes of one line: the head
 * of a longer line is kept, the rest counted in `cut`, and the stream goes on.
 */

export interface Line {
  text: string;
  /** Bytes dropped from the end of this line because it was longer than the cap. */
  cut: number;
}

export async function* readLines(stream: ReadableStream<Uint8Array>, cap: number): AsyncGenerator<Line> {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let parts: Uint8Array[] = [];
  let size = 0;
  let cut = 0;
  const take = (piece: Uint8Array) => {
    const room = cap - size;
    if (piece.length <= room) {
      parts.push(piece);
      size += piece.length;
    } else {
      if (room > 0) parts.push(piece.subarray(0, room));
      size = cap;
      cut += piece.length - Math.max(room, 0);
    }
  };
  const finish = (): Line => {
    const bytes = parts.length === 0 ? new Uint8Array(0) : parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    const line = { text: decoder.decode(bytes), cut };
    parts = [];
    size = 0;
    cut = 0;
    return line;
  };
  for await (const chunk of stream) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      take(chunk.subarray(start, nl));
      start = nl + 1;
      yield finish();
    }
    if (start < chunk.length) take(chunk.slice(start)); // copied: the reader may reuse the chunk
  }
  if (size > 0 || cut > 0) yield finish();
}
