/**
 * What a long call shows while it runs (stderr). On a terminal: the text the plugin streams, as
 * it arrives — a partial line too — with its log reports, and below them a progress line redrawn
 * in place. Off a terminal, with --stream: the streamed text as it is and the log reports as
 * lines, for a file or a pipe.
 */
import type { CallEvent } from "../host/connection.ts";
import { LEVEL_NAMES } from "../log.ts";
import { inert, inertBlock } from "../inert.ts";
import { stderrOutput } from "./_stdio.ts";

export interface ProgressView {
  onEvent(event: CallEvent): void;
  /** Clears the progress line and ends a streamed line left open; call once the call has ended. */
  finish(): void;
}

interface Output {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export function progressView(label: string, verbose: boolean, out: Output = stderrOutput, options: { stream?: boolean } = {}): ProgressView | null {
  if (out.isTTY) return terminalView(label, verbose, out);
  return options.stream ? plainView(label, verbose, out) : null;
}

function logLine(label: string, level: number, text: string): string {
  return `[${label}] ${LEVEL_NAMES[level] ?? level}: ${text}\n`;
}

/** Off a terminal: streamed text exactly as it came, log reports as whole lines. */
function plainView(label: string, verbose: boolean, out: Output): ProgressView {
  let open = false; // the last streamed text did not end its line
  return {
    onEvent(event) {
      if (event.event === "stream") {
        out.write(event.text);
        open = event.text !== "" && !event.text.endsWith("\n");
      } else if (event.event === "log" && (verbose || event.level >= 2)) {
        out.write(`${open ? "\n" : ""}${logLine(label, event.level, event.text)}`);
        open = false;
      }
    },
    finish() {
      if (open) out.write("\n");
      open = false;
    },
  };
}

/**
 * On a terminal. The cursor's column after the streamed text is tracked, so that a chunk with no
 * newline can be written where the last one ended — one line up from the progress line — and the
 * progress line drawn again below it.
 */
function terminalView(label: string, verbose: boolean, out: Output): ProgressView {
  let bar = ""; // the progress line's text
  let barShown = false; // the cursor is at the end of the progress line
  let column = 0; // where streamed text goes on: the column on its line (0: the start of a line)
  let wrapPending = false; // the last text filled its line exactly: the terminal wraps at the next character
  let swallowNewline = false; // a line break was written for a full line; a newline that follows is that break
  const columns = () => Math.max(20, out.columns || 80);

  const advance = (text: string) => {
    const width = columns();
    for (const char of text) {
      if (char === "\n") {
        column = 0;
        wrapPending = false;
        continue;
      }
      if (wrapPending) {
        column = 0;
        wrapPending = false;
      }
      column = char === "\t" ? Math.min(width, (Math.floor(column / 8) + 1) * 8) : column + 1;
      if (column >= width) wrapPending = true;
    }
  };

  const drawBar = () => {
    if (!bar) return;
    if (barShown) {
      out.write(`\r\x1b[K${bar}`);
      return;
    }
    if (wrapPending) {
      out.write("\n");
      column = 0;
      wrapPending = false;
      swallowNewline = true;
    } else if (column > 0) out.write("\n");
    out.write(`\r${bar}`);
    barShown = true;
  };

  /** Writes at the streamed text's position: the progress line is cleared first and drawn again after. */
  const writeText = (raw: string) => {
    let text = raw;
    if (swallowNewline && text) {
      if (text.startsWith("\n")) text = text.slice(1);
      swallowNewline = false;
    }
    if (!text) return;
    if (barShown) {
      out.write("\r\x1b[K");
      if (column > 0) out.write(`\x1b[A\x1b[${column + 1}G`);
      barShown = false;
    }
    out.write(text);
    advance(text);
    drawBar();
  };

  return {
    onEvent(event) {
      if (event.event === "progress") {
        const width = Math.max(10, Math.min(30, columns() - 40));
        const room = Math.max(0, columns() - width - 9);
        const text = inert(event.text.replace(/\s+/g, " ")).slice(0, room);
        if (event.percent < 0) bar = `${label} … ${text}`.slice(0, columns() - 1);
        else {
          const filled = Math.round((event.percent / 100) * width);
          bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(event.percent).padStart(3)}% ${text}`;
        }
        drawBar();
      } else if (event.event === "stream") {
        writeText(inertBlock(event.text));
      } else if (verbose || event.level >= 2) {
        writeText(`${column > 0 || wrapPending ? "\n" : ""}${logLine(label, event.level, inertBlock(event.text))}`);
      }
    },
    finish() {
      if (barShown) {
        out.write("\r\x1b[K");
        if (column > 0) out.write(`\x1b[A\x1b[${column + 1}G`);
        barShown = false;
      }
      if (column > 0 || wrapPending) out.write("\n");
      bar = "";
      column = 0;
      wrapPending = false;
    },
  };
}
