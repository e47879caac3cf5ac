/**
 * The parent's half of the spin (the plugin host's half is in ffi/shim/90-pool.c): after sending
 * the one request in flight, this thread polls the protocol channel for a while instead of going
 * to sleep in the event loop, so a reply that follows closely does not have to wake it. On the
 * 2-vCPU VM the benches run on, a wake-up on the other CPU costs tens of microseconds and counts
 * as the woken process's CPU time: a sequential noop call's mean was 15-58 µs without this and
 * 13-28 µs with a 50 µs window (rounds of 5,000 calls in one session; parent CPU per call no
 * higher, since the wake-ups it saves were counted as CPU too).
 *
 * It spins only when all of these hold, the same rules as the host's:
 *   - it pays: at least 6 of the last 8 spins saw the reply arrive within the window (one call in
 *     32 spins anyway, so replies that become quick again are noticed);
 *   - no task waits for a CPU: the runnable tasks (/proc/loadavg, this thread included) are no
 *     more than the CPUs, looked at most every 50 ms; beside a build or a second busy plugin the
 *     spinning parent would delay the very host it waits for.
 * It never spins while other calls are in flight, to this host or any other of this process (their
 * replies wake the event loop anyway; calls.ts callsInFlightHere). A spin that sees the reply
 * arrive reads it at once (protocol-socket.ts readNow), from the same thread as the channel's own
 * reader, so in order, instead of returning to the event loop to have it read. A sequential noop
 * call's median latency per round was 0.87x the build before's (median of 12 alternating rounds
 * of 5,000 calls in one process; once the rounds settled, 10.6-11.0 µs against 12.5-12.8 µs; the
 * 2-vCPU VM, Bun 1.4.5).
 */
import { readFileSync } from "node:fs";

/** The parent's window, µs; a session's spinUs below it (CXAGENT_HOST_SPIN_US) lowers it, 0 turns it off. */
export const PARENT_SPIN_US = 50;

export class ReplySpin {
  readonly budgetNs: number;
  private history = 0xff; // one bit per spin, newest lowest: 1 = the reply came within the window
  private calls = 0;

  constructor(spinUs: number) {
    this.budgetNs = spinUs * 1000;
  }

  /** Whether to spin after this request (the only one in flight). */
  wanted(cpuFree: () => boolean = machineHasFreeCpu): boolean {
    if (popcount8(this.history) < 6 && (++this.calls & 31) !== 0) return false;
    return cpuFree();
  }

  /** How the spin went: the reply arrived within the window, or not. */
  record(arrived: boolean): void {
    this.history = ((this.history << 1) | (arrived ? 1 : 0)) & 0xff;
  }
}

/** The window for a session's spin setting: null is the default. */
export function parentSpinUs(spinUs: number | null | undefined): number {
  return spinUs === null || spinUs === undefined ? PARENT_SPIN_US : Math.min(spinUs, PARENT_SPIN_US);
}

function popcount8(x: number): number {
  let n = 0;
  for (let b = x & 0xff; b; b &= b - 1) n++;
  return n;
}

let checkedAt = -Infinity;
let free = false;
const cpus = navigator.hardwareConcurrency; // the CPUs this process may run on, as availableParallelism() (node:os, not loaded here)

/** No task waits for a CPU: runnable tasks ≤ CPUs (at most one look per 50 ms). */
export function machineHasFreeCpu(): boolean {
  const now = performance.now();
  if (now - checkedAt < 50) return free;
  checkedAt = now;
  try {
    // "0.12 0.08 0.02 2/345 6789": the runnable tasks before the slash
    const running = Number(readFileSync("/proc/loadavg", "latin1").split(" ")[3]?.split("/")[0]);
    free = Number.isInteger(running) && running > 0 && running <= cpus;
  } catch {
    free = false;
  }
  return free;
}
