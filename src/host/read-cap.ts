/**
 * The read cap (issue 41): the most bytes the parent reads of one line a plugin host writes, per
 * call (`RequestOptions.readCap`, a plugin's config `readCapBytes`) and at most the line cap
 * (64 MiB). It is enforced while the line is read (lines.ts LineLimits), so the parent never holds
 * more than the cap of one line: the moment a line passes its call's cap, the call fails with
 * E_LIMIT naming the bytes, what follows is counted and dropped, and the stream is read on from
 * the next line end, the host serving on. A line that names no call, or that runs on past any
 * line a plugin host's writer writes, cannot be read on: the host is ended (the next call starts a
 * fresh one), and its calls fail with E_LIMIT.
 */
import { CxError } from "../errors.ts";
import { LINE_CAP } from "../protocol/wire.ts";
import type { Calls } from "./calls.ts";
import { type Line, type LineLimits, MIN_LINE_CAP } from "./lines.ts";

/** The call a protocol line is for, from its first bytes: a reply's `id`, or a report's. */
export function callIdOf(head: Uint8Array | string): number | null {
  const text = typeof head === "string" ? head.slice(0, 64) : Buffer.from(head.buffer, head.byteOffset, Math.min(64, head.byteLength)).toString("latin1");
  const found = /^\{"(?:event":"[a-z]+",")?id":(\d{1,15})[,}]/.exec(text);
  return found ? Number(found[1]) : null;
}

/** A call's read cap, checked: a whole number of bytes from MIN_LINE_CAP to the line cap. */
export function checkedReadCap(bytes: number | undefined, where: string): number | undefined {
  if (bytes === undefined) return undefined;
  if (Number.isInteger(bytes) && bytes >= MIN_LINE_CAP && bytes <= LINE_CAP) return bytes;
  throw new CxError("E_INVALID_INPUT", `${where} is ${bytes}; it must be a whole number of bytes from ${MIN_LINE_CAP} to ${LINE_CAP}`, {
    hint: `give a read cap from ${MIN_LINE_CAP} bytes (4 KiB) to ${LINE_CAP} (64 MiB), or none for the default`,
  });
}

export class ReadCap {
  /** Set once the stream could not be read on: every call still waiting fails with it. */
  broken: CxError | null = null;
  readonly limits: LineLimits;

  constructor(
    private readonly label: string,
    private readonly calls: Calls,
    private readonly end: () => void,
  ) {
    this.limits = {
      capOf: (head) => {
        const id = callIdOf(head);
        return (id === null ? undefined : calls.readCapOf(id)?.cap) ?? LINE_CAP;
      },
      // A reply line (not a report: `{"id":`) of a call that asked for a spill.
      sinkOf: (head) => {
        const id = head[2] === 105 ? callIdOf(head) : null;
        return (id === null ? undefined : calls.readCapOf(id)?.spill) ?? null;
      },
      onOverflow: (head, seen, cap) => this.overflow(head, seen, cap),
      runawayAt: LINE_CAP,
      onRunaway: (seen) => this.unreadable(`plugin '${label}': its plugin host wrote a protocol line of over ${seen} bytes, longer than any line its writer writes (${LINE_CAP} bytes); the stream cannot be read on`),
    };
  }

  private overflow(head: Uint8Array, seen: number, cap: number) {
    const id = callIdOf(head);
    if (id === null) {
      this.unreadable(`plugin '${this.label}': its plugin host wrote ${seen} bytes on its protocol channel past the read cap of ${cap} bytes, in a line that names no call; the stream cannot be read on`);
      return;
    }
    const call = this.calls.readCapOf(id);
    if (!call) return; // a call nobody waits for any more: its line is dropped as it arrives
    this.calls.fail(
      id,
      new CxError("E_LIMIT", `plugin '${this.label}': ${call.what} answered more than the read cap of ${cap} bytes (${seen} bytes had arrived); the call failed, and the rest of its answer is dropped as it arrives`, {
        hint: "ask the tool for less (a page, a filter), or raise the cap for this call or plugin (readCapBytes in config.json, at most 64 MiB)",
        details: { cap, bytesRead: seen },
      }),
    );
  }

  private unreadable(message: string) {
    if (this.broken) return;
    this.broken = new CxError("E_LIMIT", message, {
      hint: "the plugin host was ended and the next call starts a fresh one; what the plugin wrote may say why",
      next: { do: "see-output", plugin: this.label },
    });
    this.end();
  }

  /** A line over its cap has ended (its head only): its call, if any, is answered; it is logged. */
  ended(line: Line, log: (text: string) => void): void {
    const id = callIdOf(line.text);
    if (id !== null) this.calls.answered(id);
    log(`the plugin host wrote a protocol line over its read cap (${Buffer.byteLength(line.text) + line.cut} bytes); it was dropped`);
  }
}
