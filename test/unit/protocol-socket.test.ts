/**
 * The protocol socket pair (src/host/protocol-socket.ts): the plugin host's end may hold a big
 * reply unread, so the host writes it at once instead of in the kernel default's 208 KiB pieces.
 */
import { expect, test } from "bun:test";
import { closeSync, readFileSync, writeSync } from "node:fs";
import { readSocketLines, SEND_BUFFER, sendBufferOf, socketPair } from "../../src/host/protocol-socket.ts";

test("the host's end of the pair has the larger send buffer, as much as the kernel allows; this side's keeps the default", () => {
  const pair = socketPair();
  if (!pair) return; // not Linux: the host's stdout is a pipe
  try {
    const wmemMax = Number(readFileSync("/proc/sys/net/core/wmem_max", "utf8"));
    const wmemDefault = Number(readFileSync("/proc/sys/net/core/wmem_default", "utf8"));
    // Linux doubles what it is asked for (for its bookkeeping), after capping it at wmem_max.
    expect(sendBufferOf(pair.child)).toBe(2 * Math.min(SEND_BUFFER, wmemMax));
    expect(sendBufferOf(pair.parent)).toBe(wmemDefault);
    if (wmemMax >= SEND_BUFFER) expect(sendBufferOf(pair.child)!).toBeGreaterThan(4 * wmemDefault);
  } finally {
    closeSync(pair.parent);
    closeSync(pair.child);
  }
});

// The parent's spin reads a reply it saw arrive at once (readNow), between the socket's own reads:
// every line comes out once and in order, also one cut by a read, whose head readNow must copy out
// of the buffer it reads into, since the next readNow reads into the same buffer.
test("readNow hands over what the socket holds at once; a line it leaves open is finished by the next read, either kind, in order", async () => {
  const pair = socketPair();
  if (!pair) return; // not Linux: no socket to read
  const lines: string[] = [];
  const reader = readSocketLines(pair.parent, 1 << 20, (line) => lines.push(line.text), () => {});
  const write = (text: string) => writeSync(pair.child, text);
  const pad = "p".repeat(60);
  try {
    write('{"id":0}\n');
    await until(() => lines.length === 1); // the socket's own read; it is adopted by now
    write('{"id":1}\n{"id":2}\n{"id":3,"tail":"');
    reader.readNow();
    expect(lines).toEqual(['{"id":0}', '{"id":1}', '{"id":2}']); // at once, before any turn of the event loop
    reader.readNow(); // nothing more to read: nothing happens
    write(`abc"}\n{"id":4,"pad":"${pad}"}\n{"id":5,"tail":"`);
    reader.readNow(); // into the same buffer, over where the head of id 3 was read
    expect(lines.slice(3)).toEqual(['{"id":3,"tail":"abc"}', `{"id":4,"pad":"${pad}"}`]);
    write('def"}\n');
    await until(() => lines.length === 6); // the socket's own read finishes what readNow left open
    expect(lines[5]).toBe('{"id":5,"tail":"def"}');
  } finally {
    closeSync(pair.child);
    await reader.finished;
  }
  reader.readNow(); // after the end: nothing, and no read of a descriptor that may be reused
  expect(lines.length).toBe(6);
});

async function until(done: () => boolean) {
  for (let i = 0; i < 200 && !done(); i++) await Bun.sleep(5);
  expect(done()).toBe(true);
}
