/**
 * An in-memory transport, for tests of the connection and the plugin handle without a process:
 * the test plays the plugin host, reading the requests and writing lines, stderr and its end.
 */
import type { Line } from "../src/host/lines.ts";
import type { ExitInfo, Transport, TransportSink } from "../src/host/transport.ts";

/** The plugin host's side of the pair, driven by the test. */
export interface FakeHost {
  /** Every request line received so far, parsed. */
  readonly requests: Record<string, unknown>[];
  /** Resolves with the next request the connection sends. */
  nextRequest(): Promise<Record<string, unknown>>;
  /** Writes a protocol line (an object is serialized; a string goes as it is). */
  write(line: object | string, cut?: number): void;
  /** Writes a line on stderr. */
  stderr(text: string): void;
  /** Ends the host: the transport's `exited` settles with this. */
  exit(info?: Partial<ExitInfo>): void;
  /** Whether the connection closed the request channel. */
  readonly inputClosed: boolean;
  /** How often the connection asked the transport to end what the host left (Transport.release). */
  readonly released: number;
}

export function memoryTransport(): { connect(sink: TransportSink): Transport; host: FakeHost } {
  let sink: TransportSink | null = null;
  const requests: Record<string, unknown>[] = [];
  const waiting: ((r: Record<string, unknown>) => void)[] = [];
  let handedOut = 0;
  let ended: ((info: ExitInfo) => void) | null = null;
  let inputClosed = false;
  let released = 0;
  let gone = false;
  const exited = new Promise<ExitInfo>((resolve) => (ended = resolve));
  const finish = (info: Partial<ExitInfo> = {}) => {
    if (gone) return;
    gone = true;
    ended!({ code: info.code ?? 0, signal: info.signal ?? null });
  };
  const deliver = (to: (line: Line) => void, text: string, cut = 0) => to({ text, cut });
  const host: FakeHost = {
    requests,
    nextRequest: () =>
      new Promise((resolve) => {
        if (handedOut < requests.length) resolve(requests[handedOut++]!);
        else waiting.push(resolve);
      }),
    write: (line, cut) => sink && !gone && deliver((l) => sink!.onLine(l), typeof line === "string" ? line : JSON.stringify(line), cut),
    stderr: (text) => sink && !gone && deliver((l) => sink!.onStderr(l), text),
    exit: finish,
    get inputClosed() {
      return inputClosed;
    },
    get released() {
      return released;
    },
  };
  const transport: Transport = {
    process: null,
    exited,
    send(text) {
      if (gone) return;
      for (const line of text.split("\n")) {
        if (!line) continue;
        requests.push(JSON.parse(line) as Record<string, unknown>);
        const waiter = waiting.shift();
        if (waiter) waiter(requests[handedOut++]!);
      }
    },
    closeInput() {
      inputClosed = true;
    },
    async end(graceMs) {
      const timer = setTimeout(() => finish({ code: null, signal: "SIGKILL" }), graceMs);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      finish({ code: null, signal: "SIGKILL" });
      await exited;
    },
    adopt: () => ({ ok: false, reason: "the plugin host is not a process here" }),
    release: async () => {
      released++;
      return [];
    },
  };
  return {
    connect(s) {
      sink = s;
      return transport;
    },
    host,
  };
}
