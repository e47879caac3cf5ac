/**
 * The seam between the protocol and the process (SPEC §5): a transport carries request lines to a
 * plugin host and hands back, line by line, what it writes on its protocol channel and on stderr,
 * and says once when it has ended. The connection (connection.ts) speaks the protocol over any
 * transport: a child process (child-transport.ts), or an in-memory pair in tests
 * (test/memory-transport.ts).
 */
import type { Owned } from "../reaper/ours.ts";
import type { Line, LineLimits } from "./lines.ts";

export interface ExitInfo {
  code: number | null;
  signal: string | null;
  /** A sandboxed host stopped by a limit its sandbox set (E_LIMIT). */
  limit?: { limit: string; value: string; how?: string };
  /** A sandbox launcher that refused to start the host (E_SANDBOX): the layer, and why. */
  refused?: { layer: string; why: string };
}

/** Where a transport delivers what the plugin host writes. Called in order, one line at a time. */
export interface TransportSink {
  /** A line of the protocol channel; `cut` > 0 when it was longer than the cap (its head only). */
  onLine(line: Line): void;
  /** A line of the host's stderr (the plugin's own stdout and stderr land there too). */
  onStderr(line: Line): void;
  /** Reading the protocol channel failed (the host's end of it is then as good as gone). */
  onBroken(why: string): void;
  /** The protocol channel's caps per line, told while a line is read (issue 41: the read cap). */
  limits?: LineLimits;
}

export interface Transport {
  /** The plugin host's process as read from /proc when it started; null when there is none. */
  readonly process: Owned | null;
  /** Writes request text: whole lines. A write to a host that has gone is dropped. */
  send(text: string): void;
  /**
   * Polls the protocol channel without yielding for up to `budgetNs`: true once it has something
   * to read. Optional: a transport that cannot look without reading leaves it out (no spin).
   */
  awaitOutput?(budgetNs: number): boolean;
  /** Settles once, when the host has ended and every line it wrote has been delivered. */
  readonly exited: Promise<ExitInfo>;
  /** Closes the request channel: the host ends when it reads the end of it. */
  closeInput(): void;
  /** Waits `graceMs` for the host to end by itself, then ends it and its process group. */
  end(graceMs: number): Promise<void>;
  /** Ends the host and its process group at once. */
  kill(): Promise<void>;
  /**
   * A process the plugin says it started. Only what /proc shows counts (reaper/ours.ts): one that
   * proves to descend from the host is kept, to be ended with it, and returned with its identity.
   */
  adopt(pid: number): { ok: true; process: Required<Owned> } | { ok: false; reason: string };
  /**
   * Once the host has ended: ends what it left, its process group and the processes it adopted
   * (the reaper's one escalation, each given `graceMs`), and returns the pids known gone.
   */
  release(graceMs: number): Promise<number[]>;
}
