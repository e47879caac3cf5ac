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
import { linuxLibc } from "../libc.ts";

const PR_SET_DUMPABLE = 4;
let done = false;

/** Returns false where the platform has no such switch (not Linux) or it could not be set. */
export function makeNonDumpable(): boolean {
  if (done) return true;
  const libc = linuxLibc();
  done = libc !== null && libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) === 0;
  return done;
}
