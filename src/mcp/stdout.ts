/**
 * Over stdio, stdout is the MCP stream: one stray line (a console.log in some library, a banner)
 * and the client drops the connection. Plugins cannot reach it (each runs in its own process
 * whose stdout is already stderr, SPEC §2); this keeps the rest of this process off it too.
 */

/** Sends everything written to stdout from here on to stderr; returns the one writer of frames (written at the end of the current task). */
export function claimStdout(): (frame: string) => void {
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout) as (chunk: string) => boolean;
  stdout.write = ((...args: unknown[]) => (process.stderr.write as (...a: unknown[]) => boolean)(...args)) as typeof stdout.write;
  for (const method of ["log", "info", "debug", "trace", "dir", "dirxml", "table", "group", "groupCollapsed"] as const) {
    (console as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => console.error(...args);
  }
  // Frames of one turn of the event loop go out in one write: with calls in flight, each write
  // costs a system call and wakes the client once (16 in flight: most replies arrive together).
  let queued: string[] = [];
  const flush = () => {
    const text = queued.length === 1 ? queued[0]! : queued.join("");
    queued = [];
    write(text);
  };
  return (frame) => {
    if (queued.push(frame) === 1) queueMicrotask(flush);
  };
}
