/**
 * Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0), once, before any plugin host runs.
 *
 * This process holds the write end of every plugin host's request pipe. A process of the same
 * user may, while this one is dumpable, copy any of its descriptors (pidfd_getfd) or reopen them
 * (/proc/<pid>/fd/N), and so write requests into any plugin, past every permission decision.
 * Once non-dumpable, only a process holding CAP_SYS_PTRACE can, and every plugin host drops that
 * capability before it loads a plugin (plugin-host/harden.ts). The price: no core dumps of this
 * process, and a debugger must be root to attach to it.
 */
import { dlopen, FFIType } from "bun:ffi";
import { readFileSync } from "node:fs";

const PR_SET_DUMPABLE = 4;
let done = false;

/** The C library this process runs on (glibc or musl), as mapped. */
export function libcPath(): string {
  try {
    const maps = readFileSync("/proc/self/maps", "utf8");
    const found = /\s(\/\S*\/(?:libc\.so\.6|libc\.musl-[^/\s]*\.so\.1|ld-musl-[^/\s]*\.so\.1))$/m.exec(maps);
    if (found?.[1]) return found[1];
  } catch {
    // no /proc: fall through to the soname
  }
  return "libc.so.6";
}

/** Returns false where the platform has no such switch (not Linux) or it could not be set. */
export function makeNonDumpable(): boolean {
  if (done) return true;
  if (process.platform !== "linux") return false;
  try {
    const libc = dlopen(libcPath(), { prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
    done = libc.symbols.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) === 0;
    libc.close();
  } catch {
    done = false;
  }
  return done;
}
