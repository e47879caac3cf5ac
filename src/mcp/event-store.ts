/**
 * Resumable event streams over HTTP (issue 42 point 5): what the SDK's transport sent on each SSE
 * stream of one session, kept so that a client reconnecting with `Last-Event-ID` gets what it
 * missed. With it, the transport opens every POST stream with a priming event (an id, no data) and
 * a `retry` field, as SEP-1699 asks.
 *
 * Bounded: at most EVENT_CAP events and EVENT_BYTES of their JSON per session, the oldest dropped
 * first (the newest is always kept, however large: it may be the result a client resumes for). A
 * client that comes back after its event was dropped gets 400 ("Invalid event ID format", the SDK's
 * words) and learns nothing of other streams. Event ids are `<stream>.<n>`, counted per session,
 * never reused.
 */
import type { EventStore } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Events kept per session: a long call's progress and its result fit many times over. */
export const EVENT_CAP = 512;
/** Bytes of JSON kept per session: 64 sessions hold at most 256 MiB besides each one's newest event. */
export const EVENT_BYTES = 4 * 1024 * 1024;

export class SessionEvents implements EventStore {
  private readonly events = new Map<string, { streamId: string; message: JSONRPCMessage; bytes: number }>();
  private count = 0;
  private bytes = 0;

  constructor(
    private readonly cap = EVENT_CAP,
    private readonly byteCap = EVENT_BYTES,
  ) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}.${++this.count}`;
    const bytes = JSON.stringify(message).length;
    this.events.set(eventId, { streamId, message, bytes });
    this.bytes += bytes;
    // A Map iterates in insertion order: the first key is the oldest event.
    while (this.events.size > 1 && (this.events.size > this.cap || this.bytes > this.byteCap)) {
      const [oldest, event] = this.events.entries().next().value!;
      this.events.delete(oldest);
      this.bytes -= event.bytes;
    }
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  /** Sends the events of `lastEventId`'s stream stored after it, in order; returns that stream. */
  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const last = this.events.get(lastEventId);
    if (!last) throw new Error(`no event ${lastEventId} is kept`);
    let after = false;
    for (const [eventId, event] of [...this.events]) {
      if (after && event.streamId === last.streamId) await send(eventId, event.message);
      if (eventId === lastEventId) after = true;
    }
    return last.streamId;
  }

  get size(): number {
    return this.events.size;
  }
}
