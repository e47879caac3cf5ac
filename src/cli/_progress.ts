/**
 * What a long call shows on a terminal while it runs (stderr): a progress line redrawn in place,
 * the text the plugin streams, and its log reports.
 */
import type { CallEvent } from "../host/plugin-process.ts";
import { LEVEL_NAMES } from "../log.ts";

export interface ProgressView {
  onEvent(event: CallEvent): void;
  /** Clears the progress line; call once the call has ended. */
  finish(): void;
}

export function progressView(label: string, verbose: boolean, out: NodeJS.WriteStream = process.stderr): ProgressView | null {
  if (!out.isTTY) return null;
  let bar = ""; // the progress line, when one is shown
  let midLine = false; // streamed text ended without a newline
  const clear = () => {
    if (bar && !midLine) out.write("\r\x1b[K");
  };
  const draw = () => {
    if (bar && !midLine) out.write(bar);
  };
  return {
    onEvent(event) {
      if (event.type === "progress") {
        clear();
        const width = Math.max(10, Math.min(30, (out.columns ?? 80) - 40));
        const text = event.text.replace(/\s+/g, " ").slice(0, Math.max(0, (out.columns ?? 80) - width - 12));
        if (event.percent < 0) bar = `${label} … ${text}`;
        else {
          const filled = Math.round((event.percent / 100) * width);
          bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(event.percent).padStart(3)}% ${text}`;
        }
        draw();
      } else if (event.type === "stream") {
        clear();
        out.write(event.text);
        midLine = !event.text.endsWith("\n");
        draw();
      } else if (verbose || event.level >= 2) {
        clear();
        if (midLine) out.write("\n");
        midLine = false;
        out.write(`[${label}] ${LEVEL_NAMES[event.level] ?? event.level}: ${event.text}\n`);
        draw();
      }
    },
    finish() {
      clear();
      if (midLine) out.write("\n");
      bar = "";
      midLine = false;
    },
  };
}
