/** The HTTP server's per-session events (src/mcp/event-store.ts): replay by stream, bounded. */
import { expect, test } from "bun:test";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { EVENT_BYTES, EVENT_CAP, SessionEvents } from "../../src/mcp/event-store.ts";

const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: n } });

async function replay(store: SessionEvents, after: string) {
  const sent: [string, JSONRPCMessage][] = [];
  const stream = await store.replayEventsAfter(after, { send: async (id, message) => void sent.push([id, message]) });
  return { stream, sent };
}

test("a replay sends the events of the same stream after the given one, in order, and nothing of other streams", async () => {
  const store = new SessionEvents();
  const a1 = await store.storeEvent("a", note(1));
  const b1 = await store.storeEvent("b", note(2));
  const a2 = await store.storeEvent("a", note(3));
  const a3 = await store.storeEvent("a", note(4));
  await store.storeEvent("b", note(5));
  expect(new Set([a1, b1, a2, a3]).size).toBe(4);
  expect(await replay(store, a1)).toEqual({ stream: "a", sent: [[a2, note(3)], [a3, note(4)]] });
  expect(await replay(store, a3)).toEqual({ stream: "a", sent: [] });
  expect((await replay(store, b1)).sent.map(([, m]) => m)).toEqual([note(5)]);
  expect(await store.getStreamIdForEventId(b1)).toBe("b");
  expect(await store.getStreamIdForEventId("b.999")).toBeUndefined();
  expect(replay(store, "nope")).rejects.toThrow("no event nope is kept");
});

test("at most the cap is kept, the oldest dropped first; a dropped event can no longer be resumed from", async () => {
  const store = new SessionEvents(3);
  const ids: string[] = [];
  for (let n = 0; n < 5; n++) ids.push(await store.storeEvent("s", note(n)));
  expect(store.size).toBe(3);
  expect(await store.getStreamIdForEventId(ids[1]!)).toBeUndefined();
  expect(await store.getStreamIdForEventId(ids[2]!)).toBe("s");
  expect((await replay(store, ids[2]!)).sent.map(([id]) => id)).toEqual([ids[3]!, ids[4]!]);
  expect(new SessionEvents().size).toBe(0);
  expect(EVENT_CAP).toBe(512);
});

test("at most the byte cap of JSON is kept, besides the newest event, which is kept however large", async () => {
  const big = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", id: n, result: { text: "x".repeat(100) } });
  const size = JSON.stringify(big(1)).length;
  const store = new SessionEvents(100, size * 2);
  const a = await store.storeEvent("s", big(1));
  const b = await store.storeEvent("s", big(2));
  expect(store.size).toBe(2); // exactly at the cap
  const c = await store.storeEvent("s", big(3));
  expect(store.size).toBe(2);
  expect(await store.getStreamIdForEventId(a)).toBeUndefined();
  expect(await store.getStreamIdForEventId(b)).toBe("s");
  const huge = await store.storeEvent("s", { jsonrpc: "2.0", id: 4, result: { text: "y".repeat(size * 5) } });
  expect(store.size).toBe(1);
  expect(await store.getStreamIdForEventId(huge)).toBe("s");
  expect(await store.getStreamIdForEventId(c)).toBeUndefined();
  // The bytes of dropped events are given back: two small ones fit again beside nothing else.
  await store.storeEvent("s", big(5));
  expect(store.size).toBe(1);
  await store.storeEvent("s", big(6));
  expect(store.size).toBe(2);
  expect(EVENT_BYTES).toBe(4 * 1024 * 1024);
});
