/**
 * Reporting while a call runs (SPEC §3.3, §5.4): the host table, from the calling thread and from
 * the plugin's own threads, ordered before the reply, dropped after it.
 */
import { expect, test } from "bun:test";
import type { CallEvent } from "../../src/index.ts";
import { fixture, openSession } from "../helpers.ts";

async function withReports() {
  const logs: [number, string][] = [];
  const session = await openSession({ onLog: (_plugin, level, text) => logs.push([level, text]) });
  const plugin = await session.load(fixture("reports"));
  const call = async (tool: string, args: object = {}) => {
    const events: CallEvent[] = [];
    let settled = false;
    const late: CallEvent[] = [];
    const result = await plugin.invoke(tool, args, { onEvent: (e) => (settled ? late : events).push(e) });
    settled = true;
    return { result, events, late };
  };
  return { session, plugin, call, logs };
}

test("attach: the table is handed over once, before start, with its size and contract", async () => {
  const { session, call, logs } = await withReports();
  await using _ = session;
  const { result } = await call("attach_info");
  expect(result.output).toEqual({ size: 48, contract: 4, attachedBeforeStart: true, currentCall: expect.stringMatching(/^\d+$/) });
  expect(logs).toContainEqual([2, "reports: started (a log outside any call)"]);
});

test("progress, log and stream from the invoking thread arrive in order before the reply, text copied exactly", async () => {
  const { session, call } = await withReports();
  await using _ = session;
  const { events } = await call("from_call_thread");
  expect(events).toEqual([
    { type: "progress", percent: 50, text: "half" },
    { type: "log", level: 2, text: "working" },
    { type: "stream", text: "partial " },
    { type: "stream", text: 'output "quoted" \\ \n\t\u0001 é☃😀' },
    { type: "progress", percent: -1, text: "busy" },
  ]);
});

test("reports from a thread the plugin created, with a copied id, arrive in order", async () => {
  const { session, call } = await withReports();
  await using _ = session;
  const { events } = await call("from_own_thread");
  expect(events).toEqual([1, 2, 3, 4, 5].map((i) => ({ type: "progress", percent: i * 20, text: `thread step ${i}` })));
});

test("a report made after the call returned is dropped, and lands on no other call", async () => {
  const { session, call } = await withReports();
  await using _ = session;
  const first = await call("after_return");
  expect(first.events).toEqual([]);
  // calls that run while the late report fires (it waits 100 ms) must not receive it
  for (let i = 0; i < 20; i++) {
    const next = await call("from_own_thread");
    expect(next.events.every((e) => e.type === "progress" && e.text.startsWith("thread step"))).toBe(true);
  }
  expect(first.late).toEqual([]);
});

test("id 0: a log goes to the plugin's own log; progress and stream are dropped", async () => {
  const { session, call, logs } = await withReports();
  await using _ = session;
  const { events } = await call("id_zero");
  expect(events).toEqual([]);
  expect(logs).toContainEqual([3, "a plugin-wide warning"]);
  expect(logs.map(([, t]) => t)).not.toContain("dropped: no call");
});

test("a report naming an id the host cannot parse or place costs that report only", async () => {
  const { session, call } = await withReports();
  await using _ = session;
  const { events, result } = await call("bad_ids");
  expect(events).toEqual([{ type: "progress", percent: 100, text: "fine" }]);
  expect(result.success).toBe(true);
});

test("a burst: 100,000 reports from 8 plugin threads during 1,000 concurrent calls, each call's all there, in order", async () => {
  const { session, plugin } = await withReports();
  await using _ = session;
  const runs = await Promise.all(
    Array.from({ length: 1000 }, async () => {
      const events: CallEvent[] = [];
      let settled = false;
      let afterReply = 0;
      const result = await plugin.invoke("burst", { count: 100 }, { onEvent: (e) => (settled ? afterReply++ : events.push(e)) });
      settled = true;
      return { result, events, afterReply: () => afterReply };
    }),
  );
  for (const run of runs) {
    expect(run.result.success).toBe(true);
    const progress = run.events.filter((e) => e.type === "progress").map((e) => (e as { text: string }).text);
    expect(progress).toEqual(Array.from({ length: 100 }, (_, i) => `seq ${i}`));
    // the racing "maybe late" stream arrives before the reply or not at all
    expect(run.events.filter((e) => e.type === "stream").length).toBeLessThanOrEqual(1);
  }
  await plugin.stop();
  for (const run of runs) expect(run.afterReply()).toBe(0);
}, 120_000);
