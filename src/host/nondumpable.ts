/**
 * Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0), once, before any plugin host runs.
 *
 * This process holds the write end of every plugin host's request pipe. A process of the same
 * user may, while this one is dumpable, copy any of its descriptors (pidfd_getfd) or reopen them
 * (/proc/<pid>/fd/N), and so write requests into any plugin, past every permission decision.
 * Once non-dumpable, only a process holding CAP_SYS_PTRACE can, and every plugin host drops that
 * capability before it loads a plugin (plugin-host/harden.ts). The price: no core dumps of this
 * process, and a debugger must be root to attach to it. It also blanks /proc/<pid>/environ
 * (scrubEnviron), which non-dumpable does not keep from root.
 */
import { type Pointer, ptr, toArrayBuffer } from "bun:ffi";
import { readFileSync } from "node:fs";
import { type Libc, linuxLibc } from "../libc.ts";

const PR_SET_DUMPABLE = 4;
let done = false;

/** Returns false where the platform has no such switch (not Linux) or it could not be set. */
export function makeNonDumpable(): boolean {
  if (done) return true;
  const libc = linuxLibc();
  done = libc !== null && libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) === 0;
  if (libc !== null) scrubEnviron(libc);
  return done;
}

let scrubbed = false;

/**
 * Blanks the environment the kernel shows as /proc/<this pid>/environ, once, before any plugin
 * host runs. Non-dumpable stops an ordinary user's plugin host from reading it; root's is not
 * stopped on every kernel (issue 36), and the environment may hold secrets the hosts were not
 * given (session/host-env.ts passes an allow-list). That file is the strings the process started
 * with, at the top of its stack: each is first copied to the heap and put back with putenv, so
 * the C library's getenv and what a child inherits are unchanged (Bun copied process.env at
 * start), then the original bytes are zeroed. Returns whether it did so.
 */
export function scrubEnviron(libc: Libc): boolean {
  if (scrubbed) return true;
  let region: Uint8Array;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields 50 and 51 of proc(5): env_start, env_end (the list here starts at field 3)
    const start = Number(fields[47]);
    const end = Number(fields[48]);
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start <= 0 || end <= start) return false;
    region = new Uint8Array(toArrayBuffer(start as Pointer, 0, end - start));
  } catch {
    return false;
  }
  // Copied (and put back) before anything is zeroed: getenv never sees a blank entry.
  let from = 0;
  while (from < region.length) {
    let to = region.indexOf(0, from);
    if (to < 0) to = region.length;
    const entry = region.subarray(from, to);
    if (entry.includes(0x3d)) {
      const copy = new Uint8Array(entry.length + 1);
      copy.set(entry);
      const heap = libc.strdup(ptr(copy));
      if (heap === null || libc.putenv(heap) !== 0) return false; // nothing zeroed: all still readable as before
    }
    from = to + 1;
  }
  region.fill(0);
  scrubbed = true;
  return true;
}
