/**
 * The correlator on its own: deadlines, caps, cancellation, the pool limit and late answers, with
 * a clock the test moves by hand — no process, no waiting.
 */
import { describe, expect, test } from "bun:test";
import { CxError } from "../../src/errors.ts";
import { type CallEvent, Calls, callsInFlightHere, type Clock, PIPELINE_MS } from "../../src/host/calls.ts";
import { LINE_CAP, type Reply } from "../../src/protocol/wire.ts";

class FakeClock implements Clock {
  private time = 0;
  private timers: { at: number; fn: () => void; handle: number }[] = [];
  private nextHandle = 1;

  now(): number {
    return this.time;
  }
  setTimer(fn: () => void, ms: number): unknown {
    const handle = this.nextHandle++;
    this.timers.push({ at: this.time + ms, fn, handle });
    return handle;
  }
  clearTimer(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.handle !== handle);
  }
  get armed(): number {
    return this.timers.length;
  }
  /** Moves time forward, firing each timer that falls due, in order. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = end;
  }
}

function setup(options: { poolCap?: number; stuckMs?: number } = {}) {
  const clock = new FakeClock();
  const sent: { id: number; kind: string }[] = [];
  const calls = new Calls({
    label: "fx",
    poolCap: options.poolCap ?? 16,
    stuckMs: options.stuckMs ?? 1000,
    send: (line) => sent.push(JSON.parse(line)),
    clock,
  });
  const reply = (id: number): Reply => ({ id, ok: true, result: { success: true } });
  return { clock, sent, calls, reply };
}

/** Where a promise stands once pending microtasks have run: settled or not, without waiting on it. */
async function state<T>(promise: Promise<T>): Promise<{ settled: false } | { settled: true; value?: T; error?: CxError }> {
  let outcome: { settled: false } | { settled: true; value?: T; error?: CxError } = { settled: false };
  promise.then(
    (value) => (outcome = { settled: true, value }),
    (error: CxError) => (outcome = { settled: true, error }),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return outcome;
}

describe("deadlines", () => {
  test("a call fails with E_TIMEOUT exactly at its deadline, and its late reply is dropped", async () => {
    const { clock, sent, calls, reply } = setup();
    const call = calls.start({ kind: "invoke" }, "invoke of t", { timeoutMs: 100 });
    expect(sent).toEqual([{ id: 1, kind: "invoke" }]);
    clock.advance(99);
    expect((await state(call)).settled).toBe(false);
    clock.advance(1);
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.code).toBe("E_TIMEOUT");
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t did not answer within 100 ms");
    // Its native code still runs: it counts as in flight until the late answer comes.
    expect(calls.inFlight).toBe(1);
    expect(calls.waiting).toBe(0);
    calls.settle(reply(1));
    expect(calls.inFlight).toBe(0);
    expect(clock.armed).toBe(0);
  });

  test("a reply before the deadline resolves the call and disarms its timer", async () => {
    const { clock, calls, reply } = setup();
    const call = calls.start({ kind: "invoke" }, "invoke of t", { timeoutMs: 100 });
    calls.settle(reply(1));
    expect(await call).toEqual(reply(1));
    expect(clock.armed).toBe(0);
  });

  test("with resetOnProgress each progress report restarts the deadline, up to the cap", async () => {
    const { clock, calls } = setup();
    const seen: CallEvent[] = [];
    const call = calls.start({ kind: "invoke" }, "invoke of t", {
      timeoutMs: 100,
      resetOnProgress: true,
      maxMs: 250,
      onEvent: (e) => seen.push(e),
    });
    clock.advance(90);
    calls.event(1, { event: "progress", percent: 10, text: "a" });
    clock.advance(90); // 180: alive only because the report restarted the clock
    expect((await state(call)).settled).toBe(false);
    calls.event(1, { event: "progress", percent: 20, text: "b" });
    clock.advance(69); // 249
    expect((await state(call)).settled).toBe(false);
    clock.advance(1); // 250: the cap
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t did not finish within its cap of 250 ms");
    expect(seen.map((e) => e.event === "progress" && e.percent)).toEqual([10, 20]);
  });

  test("with resetOnProgress and no report, the call fails after timeoutMs with its own wording", async () => {
    const { clock, calls } = setup();
    const call = calls.start({ kind: "invoke" }, "invoke of t", { timeoutMs: 100, resetOnProgress: true });
    calls.event(1, { event: "log", level: 2, text: "logs do not count" });
    clock.advance(100);
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t reported no progress for 100 ms");
  });

  test("the default cap with resetOnProgress is ten times the timeout", async () => {
    const { clock, calls } = setup();
    const call = calls.start({ kind: "invoke" }, "invoke of t", { timeoutMs: 10, resetOnProgress: true });
    for (let t = 0; t < 99; t++) {
      clock.advance(1);
      calls.event(1, { event: "progress", percent: t % 100, text: "" });
    }
    expect((await state(call)).settled).toBe(false);
    clock.advance(1);
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t did not finish within its cap of 100 ms");
  });
});

describe("cancellation", () => {
  test("an abort fails the call with E_CANCELLED at once and removes the listener", async () => {
    const { calls } = setup();
    const controller = new AbortController();
    let listeners = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...a: Parameters<typeof add>) => (listeners++, add(...a))) as typeof add;
    signal.removeEventListener = ((...a: Parameters<typeof remove>) => (listeners--, remove(...a))) as typeof remove;
    const call = calls.start({ kind: "invoke" }, "invoke of t", { signal });
    expect(listeners).toBe(1);
    controller.abort();
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.code).toBe("E_CANCELLED");
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t was cancelled");
    expect(listeners).toBe(0);
  });

  test("the abort's reason is kept: in the message when it has words, and as the cause", async () => {
    const { calls } = setup();
    const controller = new AbortController();
    const call = calls.start({ kind: "invoke" }, "invoke of t", { signal: controller.signal });
    const reason = new Error("the user closed the tab");
    controller.abort(reason);
    const outcome = await state(call);
    expect(outcome.settled && outcome.error?.message).toBe("plugin 'fx': invoke of t was cancelled: the user closed the tab");
    expect(outcome.settled && (outcome.error as Error).cause).toBe(reason);
    const early = new AbortController();
    early.abort("shutting down");
    const before = await state(calls.start({ kind: "invoke" }, "invoke of u", { signal: early.signal }));
    expect(before.settled && before.error?.message).toBe("plugin 'fx': invoke of u was cancelled: shutting down");
  });

  test("a signal aborted before the start sends nothing", async () => {
    const { sent, calls } = setup();
    const controller = new AbortController();
    controller.abort();
    const outcome = await state(calls.start({ kind: "invoke" }, "invoke of t", { signal: controller.signal }));
    expect(outcome.settled && outcome.error?.code).toBe("E_CANCELLED");
    expect(sent).toEqual([]);
  });

  test("a timeout and a cancellation are told apart", async () => {
    const { clock, calls } = setup();
    const controller = new AbortController();
    const timed = calls.start({ kind: "invoke" }, "a", { timeoutMs: 5 });
    const cancelled = calls.start({ kind: "invoke" }, "b", { timeoutMs: 5, signal: controller.signal });
    const [watchT, watchC] = [state(timed), state(cancelled)];
    controller.abort();
    clock.advance(5);
    const [t, c] = [await watchT, await watchC];
    expect(t.settled && t.error?.code).toBe("E_TIMEOUT");
    expect(c.settled && c.error?.code).toBe("E_CANCELLED");
  });
});

describe("the limit on calls in native code", () => {
  test("past the pool cap, calls go out ahead while the running ones are young, and wait once they are not", async () => {
    const { clock, sent, calls, reply } = setup({ poolCap: 2 });
    calls.start({ kind: "invoke" }, "a", {});
    calls.start({ kind: "invoke" }, "b", {});
    calls.start({ kind: "invoke" }, "c", {}); // a and b are younger than PIPELINE_MS: c is sent ahead
    expect(sent.map((s) => s.id)).toEqual([1, 2, 3]);
    clock.advance(PIPELINE_MS);
    const d = calls.start({ kind: "invoke" }, "d", {}); // now a is not young: d waits for a free worker
    expect(sent.map((s) => s.id)).toEqual([1, 2, 3]);
    calls.settle(reply(1));
    calls.settle(reply(2));
    expect(sent.map((s) => s.id)).toEqual([1, 2, 3, 4]);
    calls.settle(reply(4));
    expect(await d).toEqual(reply(4));
  });

  test("once every running call has been stuck for stuckMs, queued and new calls fail with E_BUSY", async () => {
    const { clock, sent, calls } = setup({ poolCap: 2, stuckMs: 1000 });
    calls.start({ kind: "invoke" }, "a", {});
    clock.advance(500);
    calls.start({ kind: "invoke" }, "b", {});
    const queued = calls.start({ kind: "invoke" }, "c", {});
    clock.advance(999); // a has run 1499 ms, b 999 ms: not all stuck yet
    expect((await state(queued)).settled).toBe(false);
    clock.advance(2);
    const outcome = await state(queued);
    expect(outcome.settled && outcome.error?.code).toBe("E_BUSY");
    expect(outcome.settled && outcome.error?.message).toBe(
      "plugin 'fx' is busy: all 2 of its workers have been stuck in native code for over 1000 ms; c was refused",
    );
    const fresh = await state(calls.start({ kind: "invoke" }, "d", {}));
    expect(fresh.settled && fresh.error?.code).toBe("E_BUSY");
    expect(sent.map((s) => s.id)).toEqual([1, 2]);
  });

  test("a call sent ahead of workers that all became stuck fails with E_BUSY, flagged as maybe running", async () => {
    const { clock, sent, calls } = setup({ poolCap: 2, stuckMs: 1000 });
    calls.start({ kind: "invoke" }, "a", {});
    calls.start({ kind: "invoke" }, "b", {});
    const ahead = calls.start({ kind: "invoke" }, "c", {}); // sent ahead: a and b are young
    expect(sent.map((s) => s.id)).toEqual([1, 2, 3]);
    clock.advance(1001);
    const outcome = await state(ahead);
    expect(outcome.settled && outcome.error?.code).toBe("E_BUSY");
    expect(outcome.settled && outcome.error?.message).toContain("c had been sent ahead to the plugin host, where it may still run (once a worker frees); its answer will be discarded");
  });

  test("a stop is never held back by the limit", () => {
    const { sent, calls } = setup({ poolCap: 1 });
    calls.start({ kind: "invoke" }, "a", {});
    calls.start({ kind: "stop" }, "stop", {}, true);
    expect(sent.map((s) => s.kind)).toEqual(["invoke", "stop"]);
  });

  test("a request over the line cap is refused at once and never sent", async () => {
    const { sent, calls } = setup();
    const outcome = await state(calls.start({ kind: "invoke", arguments: { big: "x".repeat(LINE_CAP) } }, "a", {}));
    expect(outcome.settled && outcome.error?.code).toBe("E_INVALID_INPUT");
    expect(outcome.settled && outcome.error?.message).toStartWith("the request for a is ");
    expect(sent).toEqual([]);
  });
});

describe("events and the end of the host", () => {
  test("reports reach their call until its reply, and are dropped after it", async () => {
    const { calls, reply } = setup();
    const seen: CallEvent[] = [];
    const call = calls.start({ kind: "invoke" }, "a", { onEvent: (e) => seen.push(e) });
    calls.event(1, { event: "stream", text: "before" });
    calls.settle(reply(1));
    calls.event(1, { event: "stream", text: "after" });
    await call;
    expect(seen).toEqual([{ event: "stream", text: "before" }]);
  });

  test("reports for an abandoned call are dropped", async () => {
    const { clock, calls } = setup();
    const seen: CallEvent[] = [];
    const call = calls.start({ kind: "invoke" }, "a", { timeoutMs: 1, onEvent: (e) => seen.push(e) });
    clock.advance(1);
    await state(call);
    calls.event(1, { event: "stream", text: "late" });
    expect(seen).toEqual([]);
  });

  test("failAll rejects every pending and queued call with the cause, and disarms every timer", async () => {
    const { clock, calls } = setup({ poolCap: 1 });
    const a = calls.start({ kind: "invoke" }, "a", { timeoutMs: 100 });
    const b = calls.start({ kind: "invoke" }, "b", {});
    const [watchA, watchB] = [state(a), state(b)];
    calls.failAll((what) => new CxError("E_CRASHED", `crashed during ${what}`));
    const [x, y] = [await watchA, await watchB];
    expect(x.settled && x.error?.message).toBe("crashed during a");
    expect(y.settled && y.error?.message).toBe("crashed during b");
    expect(calls.inFlight).toBe(0);
    expect(clock.armed).toBe(0);
  });
});

describe("calls out over every host of this process (what the parent's spin asks)", () => {
  test("two correlators' calls add up; a reply, a late reply after abandoning, and a host's end take theirs off, once each", async () => {
    const base = callsInFlightHere();
    const one = setup();
    const two = setup();
    const a = one.calls.start({ kind: "invoke" }, "a", { timeoutMs: 5 });
    const d = one.calls.start({ kind: "invoke" }, "d", {});
    const b = two.calls.start({ kind: "invoke" }, "b", {});
    const c = two.calls.start({ kind: "invoke" }, "c", {});
    expect(callsInFlightHere() - base).toBe(4);
    one.clock.advance(5); // a is abandoned, but its native code still runs: it stays out
    expect((await state(a)).settled).toBe(true);
    expect(callsInFlightHere() - base).toBe(4);
    one.calls.settle(one.reply(1)); // a's late reply
    expect(callsInFlightHere() - base).toBe(3);
    two.calls.settle(two.reply(1));
    two.calls.settle(two.reply(1)); // the same reply twice counts once
    expect(callsInFlightHere() - base).toBe(2);
    two.calls.failAll((what) => new CxError("E_CRASHED", what)); // c's host ended
    expect(callsInFlightHere() - base).toBe(1);
    one.calls.settle(one.reply(2));
    await Promise.all([b, c, d].map(state));
    expect(callsInFlightHere()).toBe(base);
  });
});
