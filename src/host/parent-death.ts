/**
 * How a process started by a client (`cxagent mcp` over stdio) learns that the client died without
 * closing its stdin, without a timer (issue 42 point 2: a 500 ms poll of the parent's pid was the
 * idle server's own CPU). The kernel tells it: PR_SET_PDEATHSIG asks for SIGUSR2 when the parent
 * goes. That signal also comes when only the thread that started us ends, and anyone may send
 * SIGUSR2, so each one is checked against the parent's pid; a false one (the parent is still
 * there) has used the kernel's one notice up, and a poll takes over. Without prctl (not Linux, no
 * C library) the poll is all there is.
 */
import { linuxLibc } from "../libc.ts";

const PR_SET_PDEATHSIG = 1;
const SIGUSR2 = 12; // the same number on x86-64 and arm64
/** The poll, where the kernel cannot tell us. */
const POLL_MS = 500;

/** Calls `onDeath` once when this process's parent ends; returns the way to stop watching. */
export function whenParentDies(onDeath: () => void): () => void {
  const parent = process.ppid;
  let poll: ReturnType<typeof setInterval> | null = null;
  let done = false;
  const died = () => {
    if (done) return;
    done = true;
    stop();
    onDeath();
  };
  const startPolling = () => {
    poll ??= setInterval(() => process.ppid !== parent && died(), POLL_MS);
    poll.unref();
  };
  const onSignal = () => (process.ppid !== parent ? died() : startPolling());
  const stop = () => {
    process.off("SIGUSR2", onSignal);
    if (poll) clearInterval(poll);
    poll = null;
  };
  const libc = linuxLibc();
  if (libc && libc.prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0) === 0) {
    process.on("SIGUSR2", onSignal);
    // The parent may have gone between our start and the prctl: the kernel would never tell.
    if (process.ppid !== parent) queueMicrotask(died);
  } else {
    startPolling();
  }
  return () => {
    done = true;
    stop();
    linuxLibc()?.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  };
}
