/**
 * The CLI's writes to stdout and stderr, and its terminal checks, made without process.stdout,
 * process.stderr or process.stdin. Bun builds those streams, and loads the node:stream and
 * node:tty code behind them, the first time one is touched: in a compiled executable that did
 * nothing else, `process.stdout.write` took 14 ms of CPU and `process.stdin.isTTY` 19 ms, against
 * 3 ms for `console.log` (perf stat -r 30, Bun 1.4.5, the 2-vCPU VM). The prompts, which read the
 * terminal in raw mode, still use process.stdin; that is on a terminal only.
 *
 * Writes are synchronous and whole, in the order made: a full pipe is waited for, and a reader
 * that has gone (EPIPE) ends the output quietly, as it ends a `| head`.
 */
import { writeSync } from "node:fs";

type TtyBinding = { isTTY(fd: number): boolean };
let binding: TtyBinding | null | undefined;

/** Whether `fd` is a terminal (Bun's own tty_wrap.isTTY, which Bun tests against isatty; else node:tty's). */
export function isTTY(fd: 0 | 1 | 2): boolean {
  if (binding === undefined) {
    try {
      binding = (process as unknown as { binding(name: string): TtyBinding }).binding("tty_wrap");
      if (typeof binding?.isTTY !== "function") binding = null;
    } catch {
      binding = null;
    }
  }
  return binding ? binding.isTTY(fd) === true : (require("node:tty") as typeof import("node:tty")).isatty(fd);
}

function write(fd: 1 | 2, text: string | Uint8Array): void {
  let bytes: Uint8Array = typeof text === "string" ? Buffer.from(text) : text;
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EINTR") continue;
      if (code === "EAGAIN") {
        Bun.sleepSync(1); // a full pipe: its reader is behind
        continue;
      }
      if (code === "EPIPE") return;
      throw error;
    }
  }
}

/** Writes `text` to stdout, as it is. */
export const out = (text: string): void => write(1, text);
/** Writes bytes to stdout, exactly (`cxagent result`). */
export const outBytes = (bytes: Uint8Array): void => write(1, bytes);
/** Writes `text` to stderr, as it is. */
export const err = (text: string): void => write(2, text);

/** stderr as the progress views write to it; its width is read from process.stderr, on a terminal only. */
export const stderrOutput = {
  get isTTY() {
    return isTTY(2);
  },
  get columns() {
    return isTTY(2) ? process.stderr.columns : undefined;
  },
  write: err,
};
