/**
 * The few libc calls the plugin host makes itself: moving stdout out of the protocol's way,
 * loading the plugin with dlopen/dlsym (so every missing export can be named at once), reading
 * the small /proc files it needs, and the entry points handed to the shim.
 *
 * The files are read through libc, not node:fs: loading node:fs cost a plugin host about 2 ms of
 * CPU (and node:path about as much again) of the 15-16 ms its start took (perf stat -r 30, Bun
 * 1.4.5, the 2-vCPU VM), and the host needs nothing else from them on its way to serving calls.
 */
import { dlopen, FFIType, type Pointer, ptr, read } from "bun:ffi";

const SYMBOLS = {
  dup: { args: [FFIType.i32], returns: FFIType.i32 },
  dup2: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  open: { args: [FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
  read: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
  poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
  getppid: { args: [], returns: FFIType.i32 },
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  capget: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  capset: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
} as const;

const DL_SYMBOLS = {
  dlopen: { args: [FFIType.cstring, FFIType.i32], returns: FFIType.ptr },
  dlsym: { args: [FFIType.ptr, FFIType.cstring], returns: FFIType.ptr },
  dlerror: { args: [], returns: FFIType.cstring },
} as const;

const RTLD_NOW = 2;
const F_DUPFD_CLOEXEC = 1030;
const F_SETFD = 2;
const F_GET_SEALS = 1034;
const FD_CLOEXEC = 1;
const O_RDONLY = 0;
const O_RDWR = 2;
const O_CLOEXEC = 0o2000000;
const EINTR = 4;
const MSG_PEEK = 2;
const POLLIN = 1;
const PR_SET_PDEATHSIG = 1;
const SIGKILL = 9;

type Calls = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

/** A system call through `c`, again after an interruption: its result, or -errno. */
function again(c: Calls, call: () => number | bigint): number {
  for (;;) {
    const n = Number(call());
    if (n >= 0) return n;
    const errno = read.i32(c.__errno_location() as Pointer, 0);
    if (errno !== EINTR) return -errno;
  }
}

/** read(2) through `c`: the bytes read, 0 at the end, or -errno. */
function readSome(c: Calls, fd: number, into: Uint8Array): number {
  return again(c, () => c.read(fd, ptr(into), into.length));
}

/** The whole of a small file (a /proc file, say), read through `c`; null if it cannot be read. */
function readText(c: Calls, path: string): string | null {
  const fd = c.open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return null;
  const chunks: Buffer[] = [];
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(16384);
      const n = readSome(c, fd, chunk);
      if (n < 0) return null;
      if (n === 0) return Buffer.concat(chunks).toString("utf8");
      chunks.push(chunk.subarray(0, n));
    }
  } finally {
    c.close(fd);
  }
}

/**
 * The C library where "libc.so.6" names nothing (musl): as /proc/self/maps shows it, read through
 * node:fs (which only this case loads), else glibc's name.
 */
function mappedLibcPath(): string {
  try {
    const maps = (require("node:fs") as typeof import("node:fs")).readFileSync("/proc/self/maps", "utf8");
    const found = /\s(\/\S*\/(?:libc\.so\.6|libc\.musl-[^/\s]*\.so\.1|ld-musl-[^/\s]*\.so\.1))$/m.exec(maps);
    if (found?.[1]) return found[1];
  } catch {
    // not Linux, or no /proc: fall through to the soname
  }
  return "libc.so.6";
}

/**
 * Binds the C library this process runs on. On glibc that is "libc.so.6", already loaded, so the
 * name maps nothing new; only where it opens nothing (musl) are the maps read for the path. Reading
 * /proc/self/maps first, as before 2026-12-05, and binding the calls twice cost a host's start
 * about 0.7 ms of JavaScript (of 1.7 ms before it waits for its settings; the compiled binary,
 * Bun 1.4.5, cpu-prof over 15 starts).
 */
function bindLibc(): { path: string; libc: ReturnType<typeof dlopen<typeof SYMBOLS>> } {
  try {
    return { path: "libc.so.6", libc: dlopen("libc.so.6", SYMBOLS) };
  } catch {
    const path = mappedLibcPath();
    return { path, libc: dlopen(path, SYMBOLS) };
  }
}

export function openLibc() {
  const { path, libc } = bindLibc();
  let dl;
  try {
    dl = dlopen(path, DL_SYMBOLS);
  } catch {
    dl = dlopen("libdl.so.2", DL_SYMBOLS); // glibc before 2.34 keeps dlopen in libdl
  }
  const handle = dl.symbols.dlopen(path, RTLD_NOW) as Pointer | null;
  let pthread: Pointer | null = null;

  const symbolIn = (name: string): Pointer | null => {
    const p = handle ? (dl.symbols.dlsym(handle, name) as Pointer | null) : null;
    if (p) return p;
    // glibc before 2.34 keeps the pthread functions in libpthread
    pthread ??= dl.symbols.dlopen("libpthread.so.0", RTLD_NOW) as Pointer | null;
    return pthread ? (dl.symbols.dlsym(pthread, name) as Pointer | null) : null;
  };

  return {
    path,
    /** A copy of `fd` above 2 that processes the plugin starts do not inherit. */
    keepPrivate: (fd: number) => libc.symbols.fcntl(fd, F_DUPFD_CLOEXEC, 3),
    dup2: (from: number, to: number) => libc.symbols.dup2(from, to),
    /** Points `fd` at /dev/null. */
    nullify(fd: number) {
      const devNull = libc.symbols.open("/dev/null", O_RDWR);
      if (devNull < 0) return;
      libc.symbols.dup2(devNull, fd);
      if (devNull !== fd) libc.symbols.close(devNull);
    },
    getppid: () => libc.symbols.getppid(),
    /** Processes started from here on do not inherit `fd`. */
    closeOnExec: (fd: number) => libc.symbols.fcntl(fd, F_SETFD, FD_CLOEXEC),
    /** True when `fd` is sealed against every change (seal, shrink, grow, write): a sealed memfd. */
    sealed: (fd: number) => {
      const seals = libc.symbols.fcntl(fd, F_GET_SEALS, 0);
      return seals >= 0 && (seals & 15) === 15;
    },
    prctl: (option: number, a = 0, b = 0) => libc.symbols.prctl(option, a, b, 0, 0),
    capget: (header: Uint32Array, data: Uint32Array) => libc.symbols.capget(ptr(header), ptr(data)),
    capset: (header: Uint32Array, data: Uint32Array) => libc.symbols.capset(ptr(header), ptr(data)),
    close: (fd: number) => libc.symbols.close(fd),
    /** The whole of a small file (a /proc file, say), read on this thread; null if it cannot be read. */
    readText: (path: string) => readText(libc.symbols, path),
    /** read(2) on `fd` into `into`, again after an interruption: the bytes read, 0 at its end, or -errno. */
    read: (fd: number, into: Uint8Array) => readSome(libc.symbols, fd, into),
    /** What a socket holds to be read, copied into `into` and left there (recv MSG_PEEK): as read, or -errno (-ENOTSOCK for a pipe). */
    peek: (fd: number, into: Uint8Array) => again(libc.symbols, () => libc.symbols.recv(fd, ptr(into), into.length, MSG_PEEK)),
    /** Waits, without a deadline, until `fd` has something to read or has ended. */
    waitReadable(fd: number) {
      const pollFd = new Int32Array([fd, POLLIN]); // struct pollfd { int fd; short events; short revents; }
      again(libc.symbols, () => libc.symbols.poll(ptr(pollFd), 1, -1));
    },
    /**
     * The kernel kills this process when the thread that spawned it goes away: the guard until
     * the shim's watcher takes over (see shim_guard), and cleared then.
     */
    dieWithParent: (yes = true) => libc.symbols.prctl(PR_SET_PDEATHSIG, yes ? SIGKILL : 0, 0, 0, 0),
    /** Opens a shared library; returns the handle or the loader's own explanation. */
    open(file: string): { handle: Pointer } | { error: string } {
      const h = dl.symbols.dlopen(file, RTLD_NOW) as Pointer | null;
      if (h) return { handle: h };
      return { error: String(dl.symbols.dlerror() ?? "dlopen failed") };
    },
    symbol: (lib: Pointer, name: string): Pointer | null => dl.symbols.dlsym(lib, name) as Pointer | null,
    /** Addresses of libc functions, in the order asked, for the shim's import table. */
    addresses(names: readonly string[]): bigint[] {
      return names.map((name) => {
        const p = symbolIn(name);
        if (!p) throw new Error(`the C library at ${path} has no '${name}'`);
        return BigInt(p);
      });
    },
  };
}

export type Libc = ReturnType<typeof openLibc>;
