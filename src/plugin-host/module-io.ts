/**
 * A module plugin host's side of the pipes (module-serve.ts serves the requests): reading request
 * lines, queueing reply and event lines so that they leave whole and in order, and the small
 * readings of what a plugin did.
 */
import { readFileSync } from "node:fs";
import { describeValue } from "../protocol/issues.ts";
import { LINE_CAP } from "../protocol/wire.ts";
import type { Shim } from "./shim.ts";

/** A report's text is cut at this many characters, as the native host table cuts it. */
const REPORT_TEXT_CAP = LINE_CAP / 8;
export const reportText = (text: unknown) => {
  const s = String(text);
  return s.length > REPORT_TEXT_CAP ? s.slice(0, REPORT_TEXT_CAP) : s;
};

/** The message of whatever a plugin threw or rejected with. */
export function messageOf(error: unknown, what: string): string {
  if (error instanceof Error) return error.message || `${what} threw ${error.name} without a message`;
  if (typeof error === "string" && error) return error;
  return `${what} failed with ${describeValue(error)}`;
}

/**
 * Lines not yet written, in order, all queued on the JavaScript thread. A lone call's reply goes
 * out at the end of this microtask checkpoint; with other calls in flight, at the end of this turn
 * of the event loop, together with what they answered in the same turn: one write(2) instead of
 * one each, through the shim's locked writer. On process.exit (the plugin's, or an error nobody
 * handled) what was queued still goes out.
 */
export class Outbox {
  private readonly lines: string[] = [];

  constructor(
    private readonly shim: Shim,
    /** Whether other calls are in flight, so the queue may wait for the turn's end. */
    private readonly busy: () => boolean,
  ) {
    process.on("exit", () => this.lines.length && this.flush());
  }

  /** Queues text that is one or more whole lines. */
  send(text: string) {
    this.lines.push(text);
    if (this.lines.length > 1) return;
    if (this.busy()) setImmediate(() => this.flush());
    else queueMicrotask(() => this.flush());
  }

  private flush() {
    const text = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
    this.lines.length = 0;
    this.shim.writeText(text);
  }
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or null when there is no such process. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return field && /^\d+$/.test(field) ? field : null;
  } catch {
    return null;
  }
}

/**
 * Reads newline-delimited requests from `fd` until it closes; a line over the cap is dropped
 * (`onOversize`), not the stream.
 */
export async function readLines(fd: number, onLine: (line: string) => void, onOversize: () => void): Promise<void> {
  const reader = Bun.file(fd).stream().getReader();
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  let dropping = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    let from = 0;
    for (;;) {
      const newline = value.indexOf(10, from);
      const end = newline < 0 ? value.length : newline;
      const piece = value.subarray(from, end);
      if (!dropping) {
        if (size + piece.length > LINE_CAP) {
          dropping = true;
          parts = [];
          size = 0;
          onOversize();
        } else if (piece.length) {
          parts.push(newline < 0 ? piece.slice() : piece);
          size += piece.length;
        }
      }
      if (newline < 0) break;
      if (!dropping && size > 0) {
        const line = parts.length === 1 ? decoder.decode(parts[0]) : decoder.decode(Buffer.concat(parts, size));
        onLine(line);
      }
      dropping = false;
      parts = [];
      size = 0;
      from = newline + 1;
    }
  }
}
