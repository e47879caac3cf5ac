/**
 * What a long call shows on a terminal while it runs (stderr): the text the plugin streams, its
 * log reports, and a progress line kept at the bottom and redrawn in place. While a progress line
 * is shown, streamed text is printed a whole line at a time above it.
 */
import type { CallEvent } from "../host/connection.ts";
import { LEVEL_NAMES } from "../log.ts";
import { inert, inertBlock } from "../inert.ts";

export interface ProgressView {
  onEvent(event: CallEvent): void;
  /** Clears the progress line and prints what is left; call once the call has ended. */
  finish(): void;
}

export function progressView(label: string, verbose: boolean, out: NodeJS.WriteStream = process.stderr): ProgressView | null {
  if (!out.isTTY) return null;
  let bar = ""; // the progress line, once there is one
  let pending = ""; // streamed text after its last newline, held while a bar is shown
  let midLine = false; // the cursor is after streamed text that did not end its line
  const clear = () => {
    if (bar) out.write("\r\x1b[K");
  };
  const draw = () => {
    if (bar) out.write(bar);
  };
  const above = (text: string) => {
    clear();
    out.write(text);
    draw();
  };
  return {
    onEvent(event) {
      if (event.event === "progress") {
        const columns = out.columns || 80;
        const width = Math.max(10, Math.min(30, columns - 40));
        const text = inert(event.text.replace(/\s+/g, " ")).slice(0, Math.max(0, columns - width - 12));
        if (!bar && midLine) out.write("\n");
        midLine = false;
        clear();
        if (event.percent < 0) bar = `${label} … ${text}`;
        else {
          const filled = Math.round((event.percent / 100) * width);
          bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(event.percent).padStart(3)}% ${text}`;
        }
        draw();
      } else if (event.event === "stream") {
        const streamed = inertBlock(event.text);
        if (!bar) {
          out.write(streamed);
          midLine = !streamed.endsWith("\n");
          return;
        }
        pending += streamed;
        const end = pending.lastIndexOf("\n");
        if (end < 0) return;
        above(pending.slice(0, end + 1));
        pending = pending.slice(end + 1);
      } else if (verbose || event.level >= 2) {
        const line = `[${label}] ${LEVEL_NAMES[event.level] ?? event.level}: ${inertBlock(event.text)}\n`;
        if (midLine) out.write("\n");
        midLine = false;
        above(line);
      }
    },
    finish() {
      clear();
      if (pending) out.write(pending);
      if (pending || midLine) out.write("\n");
      bar = pending = "";
      midLine = false;
    },
  };
}
