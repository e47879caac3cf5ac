/**
 * The protocol socket pair (src/host/protocol-socket.ts): the plugin host's end may hold a big
 * reply unread, so the host writes it at once instead of in the kernel default's 208 KiB pieces.
 */
import { expect, test } from "bun:test";
import { closeSync, readFileSync } from "node:fs";
import { SEND_BUFFER, sendBufferOf, socketPair } from "../../src/host/protocol-socket.ts";

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
