/**
 * The C library functions the parent process calls through bun:ffi (flock, prctl, memfd, the
 * protocol sockets), bound by one dlopen on first use. Each dlopen compiles bindings of its own,
 * and finding the library by /proc/self/maps costs a read: done apart in four modules, that was
 * about 2 ms of every `cxagent invoke`, before its plugin host could be started.
 *
 * On Linux it is the process's own C library: "libc.so.6" (glibc maps it already, so this opens
 * nothing new), else the one /proc/self/maps names (musl). Elsewhere there is none: flock on macOS
 * is lock.ts's own, and the rest is Linux's only. (The plugin host has bindings of its own,
 * plugin-host/libc.ts: the two halves share nothing but protocol/.)
 */
import { dlopen, FFIType } from "bun:ffi";
import { readFileSync } from "node:fs";

const SYMBOLS = {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  memfd_create: { args: [FFIType.cstring, FFIType.u32], returns: FFIType.i32 },
  fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  socketpair: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
  poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64_fast },
  strdup: { args: [FFIType.ptr], returns: FFIType.ptr },
  putenv: { args: [FFIType.ptr], returns: FFIType.i32 },
} as const;

export type Libc = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

let bound: Libc | null | undefined;

/** The bindings, or null where there are none (not Linux, or no C library could be opened). */
export function linuxLibc(): Libc | null {
  if (bound !== undefined) return bound;
  bound = null;
  if (process.platform !== "linux") return bound;
  // The maps are read only when glibc's name opens nothing: reading them first cost every
  // one-shot invoke about 0.2 ms before its plugin host could be started.
  bound = bind("libc.so.6") ?? bind(mappedMusl());
  return bound;
}

/** The calls of the C library at `path`, or null where it opens nothing. */
function bind(path: string | null): Libc | null {
  if (path === null) return null;
  try {
    return dlopen(path, SYMBOLS).symbols;
  } catch {
    return null;
  }
}

/** The musl C library this process runs on, as /proc/self/maps names it; null if there is none. */
function mappedMusl(): string | null {
  try {
    const maps = readFileSync("/proc/self/maps", "utf8");
    return /\s(\/\S*\/(?:libc\.musl-[^/\s]*\.so\.1|ld-musl-[^/\s]*\.so\.1))$/m.exec(maps)?.[1] ?? null;
  } catch {
    return null;
  }
}
