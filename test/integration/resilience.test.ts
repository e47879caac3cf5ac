/**
 * Staying up under misbehaving plugins: deadlines, cancellation, stuck calls, crashes, floods.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { CALCULATOR, fixture, freeCounts, openSession, tempDir, until } from "../helpers.ts";

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as CxError);

test("a timeout fails the call at once with E_TIMEOUT; the late reply is freed and dropped", async () => {
  using dir = tempDir();
  const log = join(dir.path, "frees");
  await using session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log } });
  const slow = await session.load(fixture("slow-invoke"));
  const error = await failure(slow.invoke("slow_invoke", { ms: 400 }, { timeoutMs: 50 }));
  expect(error?.code).toBe("E_TIMEOUT");
  expect(error?.message).toBe("plugin 'slow-invoke': cxagent_plugin_invoke of slow_invoke did not answer within 50 ms");
  // describe + start + the late reply, each freed once
  await until(() => freeCounts(log).freed === 3, 5000, "the late reply to be freed");
  expect(freeCounts(log)).toEqual({ returned: 3, freed: 3 });
  expect((await slow.invoke("slow_invoke", { ms: 1 })).output.content).toBe("slept 1 ms");
});

test("an AbortSignal cancels with E_CANCELLED, distinct from a timeout", async () => {
  await using session = await openSession();
  const slow = await session.load(fixture("slow-invoke"));
  const controller = new AbortController();
  const call = failure(slow.invoke("slow_invoke", { ms: 2000 }, { signal: controller.signal, timeoutMs: 10_000 }));
  controller.abort();
  const error = await call;
  expect(error?.code).toBe("E_CANCELLED");
  expect(error?.message).toContain("was cancelled");
  expect((await failure(slow.invoke("slow_invoke", {}, { signal: controller.signal })))?.code).toBe("E_CANCELLED");
});

test("progress extends a timeout only when asked, and never past the cap", async () => {
  await using session = await openSession();
  const ticker = await session.load(fixture("ticker"));
  const args = { every: 40, total: 600 };
  const plain = await failure(ticker.invoke("ticker", args, { timeoutMs: 200 }));
  expect(plain?.code).toBe("E_TIMEOUT");
  expect((await ticker.invoke("ticker", args, { timeoutMs: 200, resetOnProgress: true })).output.content).toBe("ticked");
  const capped = await failure(ticker.invoke("ticker", args, { timeoutMs: 200, resetOnProgress: true, maxMs: 300 }));
  expect(capped?.code).toBe("E_TIMEOUT");
  expect(capped?.message).toContain("did not finish within its cap of 300 ms");
});

test("a call hung forever does not stop the plugin serving others", async () => {
  await using session = await openSession();
  const slow = await session.load(fixture("slow-invoke"));
  const hung = failure(slow.invoke("slow_invoke", { ms: 60_000 }));
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => slow.invoke("slow_invoke", { ms: i % 3 })));
  expect(results.every((r) => r.success)).toBe(true);
  await session.close();
  // Stopped on purpose: not a crash.
  expect(await hung).toMatchObject({ code: "E_STOPPED", message: "plugin 'slow-invoke' was stopped while cxagent_plugin_invoke of slow_invoke was running; the call was abandoned" });
});

test("every worker stuck: the pool grows to its cap and says so, new calls fail fast with E_BUSY, a restart recovers", async () => {
  const logs: string[] = [];
  await using session = await openSession({ poolCap: 3, stuckMs: 100, onLog: (_p, _l, text) => logs.push(text) });
  const slow = await session.load(fixture("slow-invoke"));
  const stuck = [0, 1, 2].map(() => failure(slow.invoke("slow_invoke", { ms: 60_000 })));
  await until(() => logs.some((l) => l.includes("the worker pool reached its cap: 3 calls are running at once")), 5000, "the pool to reach its cap");
  const waiting = await failure(slow.invoke("slow_invoke", { ms: 1 })); // waits, then all are stuck
  expect(waiting?.code).toBe("E_BUSY");
  const next = await failure(slow.invoke("slow_invoke", { ms: 1 }));
  expect(next?.code).toBe("E_BUSY");
  expect(next?.message).toContain("all 3 of its workers have been stuck in native code for over 100 ms");
  await slow.restart();
  for (const s of stuck) expect((await s)?.code).toBe("E_STOPPED"); // ended on purpose, not crashed
  expect((await slow.invoke("slow_invoke", { ms: 1 })).output.content).toBe("slept 1 ms");
});

test("requests beyond the pool's cap go out while calls are fast; those sent ahead of stuck workers fail with E_BUSY, flagged as maybe running", async () => {
  // stuckMs far above the time four calls take to be sent, also on a loaded machine (100 ms was not:
  // the last two were refused as if every worker were already stuck, instead of sent ahead)
  await using session = await openSession({ poolCap: 2, stuckMs: 1000 });
  const slow = await session.load(fixture("slow-invoke"));
  // fast calls, far more than the cap, all at once: every one is answered
  const fast = await Promise.all(Array.from({ length: 40 }, (_, i) => slow.invoke("slow_invoke", { ms: i % 2 })));
  expect(fast.every((r) => r.success)).toBe(true);
  // four calls that never end, sent in one turn: two fill the cap, and the other two go out ahead
  // of them if the first two are younger than PIPELINE_MS (2 ms) when they are sent, else they wait.
  // On a loaded machine the sends may be further apart: either way they fail with E_BUSY once both
  // workers are stuck (the sent-ahead wording is held by test/unit/calls.test.ts's fake clock).
  const stuck = [0, 1, 2, 3].map(() => failure(slow.invoke("slow_invoke", { ms: 60_000 })));
  const ahead = await Promise.all([stuck[2]!, stuck[3]!]);
  for (const error of ahead) {
    expect(error?.code).toBe("E_BUSY");
    expect(error?.message).toMatch(/had been sent ahead to the plugin host, where it may still run|all 2 of its workers have been stuck in native code for over 1000 ms; .* was refused/);
  }
  // a call made now is refused outright: it never reaches the plugin
  const refused = await failure(slow.invoke("slow_invoke", { ms: 1 }));
  expect(refused?.code).toBe("E_BUSY");
  expect(refused?.message).toContain("was refused");
  await slow.restart();
  for (const s of stuck.slice(0, 2)) expect((await s)?.code).toBe("E_STOPPED"); // ended on purpose by the restart
  expect((await slow.invoke("slow_invoke", { ms: 1 })).output.content).toBe("slept 1 ms");
});

test("crashes: a fresh plugin host each time, until 3 crashes in 5 minutes quarantine it; others unaffected", async () => {
  const logs: string[] = [];
  await using session = await openSession({ onLog: (_p, _l, text) => logs.push(text) });
  const crashing = await session.load(fixture("crash-in-invoke"));
  const calc = await session.load(CALCULATOR);
  const pids = new Set<number>();
  for (let i = 0; i < 3; i++) {
    expect((await crashing.invoke("fine")).output.content).toBe("survived");
    pids.add(crashing.pid!);
    expect((await failure(crashing.invoke("segfault")))?.code).toBe("E_CRASHED");
  }
  expect(pids.size).toBe(3);
  expect(crashing.isQuarantined).toBe(true);
  const error = await failure(crashing.invoke("fine"));
  expect(error?.code).toBe("E_QUARANTINED");
  expect(error?.message).toBe("plugin 'crash-in-invoke' crashed 3 times within 5 minutes and is quarantined for the rest of this session");
  expect(logs).toContain(error!.message);
  expect((await calc.invoke("calc_multiply", { a: 5, b: 5 })).output.answer).toBe(25);
});

test("100 MB on stderr during a call does not stall it; every line reaches the plugin's log, tagged", async () => {
  let lines = 0;
  let bytes = 0;
  await using session = await openSession({
    onOutput: (plugin, line) => {
      if (plugin === "stderr-flood") {
        lines++;
        bytes += line.length + 1;
      }
    },
  });
  const flood = await session.load(fixture("stderr-flood"));
  expect((await flood.invoke("stderr_flood", { mb: 100 })).output.content).toBe("wrote 100 MB");
  await until(() => lines === 100 * 1024, 20_000, "every stderr line");
  expect(bytes).toBe(100 * 1024 * 1024);
}, 60_000);
