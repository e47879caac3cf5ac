/**
 * The channel a plugin host writes its protocol lines on (its fd 1) is one end of a Unix socket
 * pair, and this process reads the other end as a Bun socket (`Bun.connect({ fd })`), whose data
 * callback hands over each read as it comes. A pipe read as a web stream (Bun.spawn's stdout)
 * costs a promise, a pull and an epoll_ctl per chunk: with the socket, a sequential call's parent
 * CPU fell from 19 to 23 µs to 14 to 16 µs and its mean from 23 to 31 µs to 15 to 24 µs (noop,
 * paired runs on the 2-vCPU VM, Bun 1.4.5); big replies were unchanged. Requests still go down
 * a pipe (the host's fd 0), whose end is how the host learns the parent is done.
 *
 * Linux only, like the memfds (the pair is made through the C library); elsewhere, or if it
 * cannot be made, the host's stdout is a pipe read as before (lines.ts readLines).
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { closeSync } from "node:fs";
import { type Line, LineSplitter, readLines } from "./lines.ts";
import { libcPath } from "./nondumpable.ts";

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;

type Pointer = ReturnType<typeof ptr>;
let libc:
  | { symbols: { socketpair: (domain: number, type: number, protocol: number, fds: Pointer) => number; poll: (fds: Pointer, n: number, timeoutMs: number) => number } }
  | null
  | undefined;

function loadLibc() {
  if (libc === undefined) {
    try {
      libc = dlopen(libcPath(), {
        socketpair: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
        poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
      });
    } catch {
      libc = null;
    }
  }
  return libc;
}

/** A connected pair, close-on-exec: [this process's end, the plugin host's end]; null where there is none. */
export function socketPair(): { parent: number; child: number } | null {
  if (process.platform !== "linux") return null;
  const c = loadLibc();
  if (!c) return null;
  const fds = new Int32Array(2);
  if (c.symbols.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ptr(fds)) !== 0) return null;
  return { parent: fds[0]!, child: fds[1]! };
}

// One struct pollfd ({ int fd; short events; short revents; }), reused: this thread only.
const pollFd = new Int32Array(2);
const pollEvents = new Int16Array(pollFd.buffer, 4, 2);
const POLLIN = 1;

/**
 * Polls `fd` without sleeping until it has something to read (or has closed) or `budgetNs` has
 * passed; true when it has. It reads nothing: the socket's own reader gets the data when the
 * event loop next looks, at once, instead of after this thread has been woken from its sleep.
 */
export function pollReadable(fd: number, budgetNs: number): boolean {
  const c = loadLibc();
  if (!c) return false;
  const p = ptr(pollFd);
  const until = Bun.nanoseconds() + budgetNs;
  for (;;) {
    pollFd[0] = fd;
    pollEvents[0] = POLLIN;
    pollEvents[1] = 0;
    if (c.symbols.poll(p, 1, 0) !== 0) return true;
    if (Bun.nanoseconds() >= until) return false;
  }
}

/** Closes what is left of a pair that was not used. */
export function closePair(pair: { parent?: number | null; child?: number | null } | null): void {
  for (const fd of [pair?.parent, pair?.child]) {
    if (fd === null || fd === undefined) continue;
    try {
      closeSync(fd);
    } catch {
      // closed already
    }
  }
}

/**
 * Reads this process's end of the pair line by line until the host's end is closed (it and
 * every process holding it are gone); the socket then closes its descriptor. Each chunk is a
 * buffer of its own, so the splitter may keep pieces of a long line without copying them.
 */
export function readSocketLines(fd: number, cap: number, onLine: (line: Line) => void, onBroken: (why: string) => void): Promise<void> {
  const splitter = new LineSplitter(cap);
  return new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      splitter.end(onLine);
      resolve();
    };
    const options: Bun.FdSocketOptions = {
      fd,
      socket: {
        data(_socket, chunk) {
          splitter.push(chunk, onLine);
        },
        end: finish,
        close: finish,
        error(_socket, error) {
          onBroken(`reading the plugin host's output failed: ${String(error)}`);
          finish();
        },
      },
    };
    // bun-types 1.4.5 declares FdSocketOptions without the overload of connect that takes it.
    Bun.connect(options as unknown as Parameters<typeof Bun.connect>[0]).catch(() => {
      // Not a socket this runtime can adopt: read the same descriptor as a stream instead.
      readLines(Bun.file(fd).stream(), cap, onLine)
        .catch((error: unknown) => onBroken(`reading the plugin host's output failed: ${String(error)}`))
        .finally(finish);
    });
  });
}
