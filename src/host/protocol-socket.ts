/**
 * The channel a plugin host writes its protocol lines on (its fd 1) is one end of a Unix socket
 * pair, and this process reads the other end as a Bun socket (`Bun.connect({ fd })`), whose data
 * callback hands over each read as it comes. A pipe read as a web stream (Bun.spawn's stdout)
 * costs a promise, a pull and an epoll_ctl per chunk: with the socket, a sequential call's parent
 * CPU fell from 19 to 23 µs to 14 to 16 µs and its mean from 23 to 31 µs to 15 to 24 µs (noop,
 * paired runs on the 2-vCPU VM, Bun 1.4.5); big replies were unchanged. Requests still go down
 * the host's fd 0 as Bun.spawn makes it (Bun 1.4.5 makes that a socket pair too, written through
 * its own writer), whose end is how the host learns the parent is done.
 *
 * The host's end may hold up to SEND_BUFFER bytes not yet read (the kernel's default is 208 KiB):
 * a 1 MiB reply then goes out in one write and comes in two reads of Bun's 512 KiB, not five of
 * 208 KiB, each a wake-up of the side that waited. Paired runs of 1 MiB replies on the 2-vCPU VM
 * (4 pairs): 1.0-1.57 ms → 0.92-1.24 ms per call, parent CPU 0.87-1.09 → 0.77-1.01 ms. The
 * buffer is a ceiling, not memory set aside: the kernel holds only what the parent has not read.
 * (Since then, what follows the first read of a long line is read by the splitter itself: see
 * readSocketLines.)
 *
 * Linux only, like the memfds (the pair is made through the C library); elsewhere, or if it
 * cannot be made, the host's stdout is a pipe read as before (lines.ts readLines).
 */
import { ptr } from "bun:ffi";
import { closeSync } from "node:fs";
import { type Line, type LineLimits, LineSplitter, readLines } from "./lines.ts";
import { linuxLibc } from "../libc.ts";

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_SNDBUF = 7;
const MSG_DONTWAIT = 0x40;
/** What the host's end asks for (the kernel doubles it, up to twice net.core.wmem_max). */
export const SEND_BUFFER = 4 << 20;

/**
 * A connected pair, close-on-exec: [this process's end, the plugin host's end], the host's end with
 * a send buffer of SEND_BUFFER where the kernel allows it (a refusal leaves its default); null
 * where there is no pair.
 */
export function socketPair(): { parent: number; child: number } | null {
  const c = linuxLibc();
  if (!c) return null;
  const fds = new Int32Array(2);
  if (c.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ptr(fds)) !== 0) return null;
  const size = new Int32Array([SEND_BUFFER]);
  c.setsockopt(fds[1]!, SOL_SOCKET, SO_SNDBUF, ptr(size), 4);
  return { parent: fds[0]!, child: fds[1]! };
}

/** The send buffer the kernel gave socket `fd`, in bytes (what SO_SNDBUF reads back); null if it cannot say. */
export function sendBufferOf(fd: number): number | null {
  const c = linuxLibc();
  if (!c) return null;
  const value = new Int32Array(1);
  const size = new Uint32Array([4]);
  return c.getsockopt(fd, SOL_SOCKET, SO_SNDBUF, ptr(value), ptr(size)) === 0 ? value[0]! : null;
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
  const c = linuxLibc();
  if (!c) return false;
  const p = ptr(pollFd);
  const until = Bun.nanoseconds() + budgetNs;
  for (;;) {
    pollFd[0] = fd;
    pollEvents[0] = POLLIN;
    pollEvents[1] = 0;
    if (c.poll(p, 1, 0) !== 0) return true;
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

/** The reader of a protocol socket (readSocketLines). */
export interface SocketLines {
  /** Settles once the host's end is closed and every line has been handed over. */
  finished: Promise<void>;
  /**
   * Reads what the socket holds now, at once, and hands over its lines, instead of leaving it to
   * the next turn of the event loop: for the parent's spin (reply-spin.ts), which has just seen the
   * reply arrive. Does nothing before the socket is adopted or once it has closed.
   */
  readNow(): void;
}

/**
 * Reads this process's end of the pair line by line until the host's end is closed (it and
 * every process holding it are gone); the socket then closes its descriptor. Each chunk is a
 * buffer of its own, so the splitter may keep pieces of a long line without copying them.
 */
export function readSocketLines(fd: number, cap: number, onLine: (line: Line) => void, onBroken: (why: string) => void, limits?: LineLimits): SocketLines {
  const c = linuxLibc();
  // A long line is read on from the descriptor itself (LineSplitter.drain), and so is a reply the
  // spin saw arrive (readNow). Only this thread reads it, between the socket's own reads, so the
  // bytes stay in order; what ends or fails there is left for the socket's reader to find, as it
  // would have. What these reads leave is still reported to the socket: Bun 1.4.5 watches it
  // level-triggered (EPOLLIN, no EPOLLET, as strace shows). Were it edge-triggered, it would wait
  // for the next bytes to arrive.
  const splitter = new LineSplitter(cap, c ? (into) => Number(c.recv(fd, ptr(into), into.length, MSG_DONTWAIT)) : undefined, limits);
  let adopted = false;
  let finished = false;
  const readNow = () => {
    if (adopted && !finished) splitter.pullNow(onLine);
  };
  const done = new Promise<void>((resolve) => {
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
    Bun.connect(options as unknown as Parameters<typeof Bun.connect>[0]).then(
      () => (adopted = true),
      () => {
        // Not a socket this runtime can adopt: read the same descriptor as a stream instead.
        readLines(Bun.file(fd).stream(), cap, onLine, limits)
          .catch((error: unknown) => onBroken(`reading the plugin host's output failed: ${String(error)}`))
          .finally(finish);
      },
    );
  });
  return { finished: done, readNow };
}
