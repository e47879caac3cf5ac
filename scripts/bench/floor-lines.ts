/**
 * Newline framing for the floor's two ends, linear in the line's length (a big line arrives in
 * many chunks; joining them once, at its end, keeps a 16 MiB line from costing quadratic time).
 */
export async function forEachLine(stream: AsyncIterable<Uint8Array>, onLine: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      if (parts.length === 0) onLine(decoder.decode(piece));
      else {
        parts.push(piece);
        onLine(decoder.decode(Buffer.concat(parts, size + piece.length)));
        parts = [];
        size = 0;
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      parts.push(chunk.slice(start)); // copied: the reader may reuse the chunk
      size += chunk.length - start;
    }
  }
}
