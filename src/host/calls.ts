/**
 * The calls in flight to one plugin host: ids, deadlines, cancellation, the events that belong to
 * each call, and the limit on how many may be in native code at once (SPEC §5, §12). A call the
 * caller gave up on stays counted until its late reply comes, because its native code still runs.
 *
 * Sending ahead. The host runs at most `poolCap` calls at once and serves its requests in order,
 * so requests sent beyond that number wait in the host's input, not in native code. While every
 * call sent is young (under PIPELINE_MS, so none is slow enough for the host to have handed its
 * thread's reading role on), up to PIPELINE_CAP requests go out at once: with 256 calls in flight
 * that doubled the calls per second (160k → 340k/s measured) against holding them here. Once a
 * call is older, requests beyond `poolCap` wait here as before, and E_BUSY refuses them when the
 * `poolCap` oldest calls are all stuck. Requests already sent ahead then fail with E_BUSY too, but
 * as abandoned calls: they may still run once a worker frees, and their answers are discarded.
 */
import { CxError } from "../errors.ts";
import { type DeadlineRequest, type DeadlineSource, timeoutError } from "./deadline.ts";
import { HOST_DEFAULTS } from "../protocol/host-args.ts";
import type { LineSink } from "./lines.ts";
import { LINE_CAP, type Reply } from "../protocol/wire.ts";

export type CallEvent =
  | { event: "progress"; percent: number; text: string }
  | { event: "log"; level: number; text: string }
  | { event: "stream"; text: string };

export interface RequestOptions extends DeadlineRequest {
  /** Who set the deadline, for the E_TIMEOUT it causes (deadline.ts; default: the call itself). */
  source?: DeadlineSource;
  signal?: AbortSignal;
  onEvent?: (event: CallEvent) => void;
  /** The most bytes of this call's reply (and each of its reports) the parent reads (issue 41; default: the line cap). */
  readCap?: number;
  /** Where this call's reply goes as it is read, when it does not arrive in one read (issue 41: the spill). */
  spill?: LineSink;
}

/** Time and timers, injected so the correlator's deadlines can be tested without waiting. */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface CallsOptions {
  /** The plugin's name, for messages. */
  label: string;
  /** At most this many calls in native code at once. */
  poolCap: number;
  /** A call running this long counts as stuck when deciding whether to refuse new calls. */
  stuckMs: number;
  /** Writes one request line to the plugin host. */
  send: (line: string) => void;
  /** A call that was sent has been given up on (the host is told, so a module plugin can stop). */
  onAbandon?: (id: number, error: CxError) => void;
  clock?: Clock;
}

interface Pending {
  what: string;
  line: string;
  resolve: (reply: Reply) => void;
  reject: (error: CxError) => void;
  onEvent?: (event: CallEvent) => void;
  cleanup: () => void;
  readCap?: number;
  spill?: LineSink;
}

/**
 * A request's line: the id first, then the body's fields. One JSON.stringify of a new object that
 * holds the body's members (not copies of their values): 0.02 to 0.2 µs less per call than
 * stringifying the body and splicing the id into the text, which also left a rope to flatten.
 */
export function requestLine(id: number, body: object): string {
  return JSON.stringify({ id, ...body }) + "\n";
}

/** Calls sent and not answered yet, over every plugin host this process talks to. */
let inFlightHere = 0;

/**
 * How many calls this process has out, to every plugin host together: the parent's spin waits
 * only for the one call out (reply-spin.ts), since with more out another reply may be ready to
 * handle while it waits.
 */
export function callsInFlightHere(): number {
  return inFlightHere;
}

/** At most this many requests are out at once, counting those sent ahead of the pool's cap. */
export const PIPELINE_CAP = HOST_DEFAULTS.pipelineCap;
/** Requests are sent ahead only while every call out has been out less than this long. */
export const PIPELINE_MS = 2;

export class Calls {
  private readonly pending = new Map<number, Pending>();
  /** Calls whose native code may still be running (sent, not answered yet), by send time. */
  private readonly unanswered = new Map<number, number>();
  /** Calls waiting for a free worker. */
  private readonly queue: number[] = [];
  private queueTimer: unknown = null;
  private nextId = 1;
  private readonly label: string;
  private readonly poolCap: number;
  private readonly stuckMs: number;
  private readonly send: (line: string) => void;
  private readonly onAbandon: ((id: number, error: CxError) => void) | undefined;
  private readonly clock: Clock;

  constructor(options: CallsOptions) {
    this.label = options.label;
    this.poolCap = options.poolCap;
    this.stuckMs = options.stuckMs;
    this.send = options.send;
    this.onAbandon = options.onAbandon;
    this.clock = options.clock ?? realClock;
  }

  /** Calls sent and not answered yet. */
  get inFlight(): number {
    return this.unanswered.size;
  }

  get waiting(): number {
    return this.pending.size;
  }

  /** An id for a request that gets no reply. */
  takeId(): number {
    return this.nextId++;
  }

  /**
   * Starts a call and resolves with its reply, or fails at its deadline, its cancellation or the
   * host's end. At most `poolCap` calls are in native code at once; more wait their turn, unless
   * every one running has been stuck for `stuckMs`: then they fail at once with E_BUSY.
   * `body` is the request without its id; `what` names it in messages.
   */
  start(body: object, what: string, options: RequestOptions, urgent = false): Promise<Reply> {
    if (options.signal?.aborted) return Promise.reject(cancelled(this.label, what, options.signal.reason));
    const id = this.nextId++;
    const line = requestLine(id, body);
    if (line.length > LINE_CAP) {
      return Promise.reject(new CxError("E_INVALID_INPUT", `the request for ${what} is ${line.length} characters, over the ${LINE_CAP >> 20} MiB line cap`));
    }
    const full = !urgent && (this.queue.length > 0 || !this.canSend());
    if (full && this.allStuck()) return Promise.reject(this.busyError(what));
    return new Promise<Reply>((resolve, reject) => {
      let timer: unknown;
      const onAbort = () => this.abandon(id, cancelled(this.label, what, options.signal?.reason));
      const cleanup = () => {
        if (timer !== undefined) this.clock.clearTimer(timer);
        options.signal?.removeEventListener("abort", onAbort);
      };
      let onEvent = options.onEvent;
      if (options.timeoutMs !== undefined) {
        const timeoutMs = options.timeoutMs;
        const began = this.clock.now();
        const capMs = options.maxMs ?? timeoutMs * 10;
        const arm = (ms: number, why: string) => {
          if (timer !== undefined) this.clock.clearTimer(timer);
          timer = this.clock.setTimer(() => {
            this.abandon(id, timeoutError(this.label, what, why, timeoutMs, options.source));
          }, ms);
        };
        arm(Math.min(timeoutMs, capMs), options.resetOnProgress ? `reported no progress for ${timeoutMs} ms` : `did not answer within ${timeoutMs} ms`);
        if (options.resetOnProgress) {
          onEvent = (event) => {
            if (event.event === "progress") {
              const left = capMs - (this.clock.now() - began);
              arm(Math.min(timeoutMs, Math.max(left, 0)), left < timeoutMs ? `did not finish within its cap of ${capMs} ms` : `reported no progress for ${timeoutMs} ms`);
            }
            options.onEvent?.(event);
          };
        }
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, { what, line, resolve, reject, onEvent, cleanup, readCap: options.readCap, spill: options.spill });
      if (full) {
        this.queue.push(id);
        this.watchQueue();
      } else {
        this.transmit(id);
      }
    });
  }

  /** A reply arrived: settle its call, unless the caller gave up on it already. */
  settle(reply: Reply): void {
    if (this.unanswered.delete(reply.id)) inFlightHere--;
    this.drainQueue();
    const p = this.pending.get(reply.id);
    if (!p) return; // a late reply to an abandoned call: the host freed its string already
    this.pending.delete(reply.id);
    p.cleanup();
    p.resolve(reply);
  }

  /** An event for call `id`, dropped when nobody waits for that call any more. */
  event(id: number, event: CallEvent): void {
    this.pending.get(id)?.onEvent?.(event);
  }

  /** Call `id`'s read cap and what it calls, while it waits (a line of its reply is being read). */
  readCapOf(id: number): { cap: number | undefined; what: string; spill: LineSink | undefined } | null {
    const p = this.pending.get(id);
    return p ? { cap: p.readCap, what: p.what, spill: p.spill } : null;
  }

  /** Fails call `id` now (its reply broke a limit): its late reply, if any, is dropped. */
  fail(id: number, error: CxError): void {
    this.abandon(id, error);
  }

  /** Call `id`'s reply came and was dropped (over its read cap): it no longer counts as out. */
  answered(id: number): void {
    if (this.unanswered.delete(id)) inFlightHere--;
    this.drainQueue();
  }

  /** The host is gone: every call fails, each with the error `why` makes for it. */
  failAll(why: (what: string) => CxError): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.cleanup();
      p.reject(why(p.what));
    }
    inFlightHere -= this.unanswered.size;
    this.unanswered.clear();
    this.queue.length = 0;
    if (this.queueTimer !== null) this.clock.clearTimer(this.queueTimer);
    this.queueTimer = null;
  }

  private transmit(id: number) {
    const p = this.pending.get(id);
    if (!p) return;
    if (!this.unanswered.has(id)) inFlightHere++;
    this.unanswered.set(id, this.clock.now());
    this.send(p.line);
    if (this.unanswered.size > this.poolCap) this.watchQueue(); // sent ahead: watched like the queue
  }

  /** Whether one more request may go out now: below the pool's cap, or sent ahead (see above). */
  private canSend(): boolean {
    const out = this.unanswered.size;
    if (out < this.poolCap) return true;
    if (out >= Math.max(PIPELINE_CAP, this.poolCap)) return false;
    const oldest = this.unanswered.values().next().value!; // a Map keeps the order of sending
    return this.clock.now() - oldest < PIPELINE_MS;
  }

  private drainQueue() {
    while (this.queue.length && this.canSend()) {
      const id = this.queue.shift()!;
      if (this.pending.has(id)) this.transmit(id);
    }
    if (!this.queue.length && this.unanswered.size <= this.poolCap && this.queueTimer !== null) {
      this.clock.clearTimer(this.queueTimer);
      this.queueTimer = null;
    }
  }

  /** The `poolCap` oldest calls out — the ones the host is running — have all run `stuckMs`. */
  private allStuck(): boolean {
    if (this.unanswered.size < this.poolCap) return false;
    const now = this.clock.now();
    let k = 0;
    for (const sentAt of this.unanswered.values()) {
      if (now - sentAt < this.stuckMs) return false;
      if (++k === this.poolCap) break;
    }
    return true;
  }

  /** When the `poolCap`-th oldest call out will have run `stuckMs`. */
  private stuckAt(): number {
    let k = 0;
    let at = 0;
    for (const sentAt of this.unanswered.values()) {
      at = sentAt;
      if (++k === this.poolCap) break;
    }
    return at + this.stuckMs;
  }

  /**
   * Once every running call has been stuck for `stuckMs`, fails the queue with E_BUSY (refused,
   * never sent) and abandons the requests sent ahead (E_BUSY too; they may still run later).
   */
  private watchQueue() {
    if (this.queueTimer !== null || (!this.queue.length && this.unanswered.size <= this.poolCap)) return;
    const wait = Math.max(0, this.stuckAt() - this.clock.now()) + 1;
    this.queueTimer = this.clock.setTimer(() => {
      this.queueTimer = null;
      if (!this.allStuck()) {
        this.drainQueue();
        return this.watchQueue();
      }
      for (const id of this.queue.splice(0)) {
        const p = this.pending.get(id);
        if (p) this.abandon(id, this.busyError(p.what));
      }
      let k = 0;
      for (const id of this.unanswered.keys()) {
        if (++k <= this.poolCap) continue;
        const p = this.pending.get(id);
        if (p) this.abandon(id, this.busyError(p.what, true));
      }
    }, wait);
  }

  private busyError(what: string, sentAhead = false): CxError {
    const outcome = sentAhead
      ? `${what} had been sent ahead to the plugin host, where it may still run (once a worker frees); its answer will be discarded`
      : `${what} was refused`;
    return new CxError("E_BUSY", `plugin '${this.label}' is busy: all ${this.poolCap} of its workers have been stuck in native code for over ${this.stuckMs} ms; ${outcome}`, {
      hint: "stuck calls cannot be interrupted; wait for them, or restart the plugin",
      next: { do: "restart", plugin: this.label },
    });
  }

  /** Gives up on a call: it fails now; a late reply will be dropped when it comes. */
  private abandon(id: number, error: CxError) {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.cleanup();
    p.reject(error);
    if (this.unanswered.has(id)) this.onAbandon?.(id, error);
  }
}

/** The caller's abort reason is kept: in the message when it has words, and as the error's cause. */
function cancelled(label: string, what: string, reason?: unknown) {
  const words = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "";
  // AbortController.abort() with no reason gives a DOMException "The operation was aborted." or similar: nothing to add.
  const told = words && !(reason instanceof Error && reason.name === "AbortError") ? `: ${words}` : "";
  return new CxError("E_CANCELLED", `plugin '${label}': ${what} was cancelled${told}`, {
    hint: "the plugin's call runs on (it cannot be interrupted) and its late answer will be discarded",
    cause: reason,
  });
}
