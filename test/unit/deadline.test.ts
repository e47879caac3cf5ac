/**
 * A call's deadline is decided by one pure function (src/host/deadline.ts), which says who set it;
 * the one E_TIMEOUT names that source.
 */
import { expect, test } from "bun:test";
import { gateDeadline, invokeDeadline, timeoutError } from "../../src/host/deadline.ts";

const by = { source: "/p/.cxagent/config.json", rule: 'plugins["p"].invokeTimeoutMs', pattern: null, kind: "limit" as const };
const limit = { ms: 200, by };

test("a call's own deadline is its own; with none, the tool's default; neither: no deadline", () => {
  expect(invokeDeadline({ timeoutMs: 100 }, "p", "t", 1000, null)).toEqual({ timeoutMs: 100, resetOnProgress: undefined, maxMs: undefined, source: { from: "call" } });
  expect(invokeDeadline({}, "p", "t", 1000, null)).toEqual({ timeoutMs: 1000, resetOnProgress: false, maxMs: undefined, source: { from: "tool", plugin: "p", tool: "t", ms: 1000 } });
  expect(invokeDeadline({}, "p", "t", null, null).timeoutMs).toBeUndefined();
});

test("a config file's limit bounds what could take longer, and is then the source", () => {
  expect(invokeDeadline({ timeoutMs: 30_000 }, "p", "t", null, limit)).toMatchObject({ timeoutMs: 200, resetOnProgress: false, source: { from: "policy", limit } });
  expect(invokeDeadline({}, "p", "t", null, limit)).toMatchObject({ timeoutMs: 200, source: { from: "policy" } });
  expect(invokeDeadline({}, "p", "t", 1000, limit)).toMatchObject({ timeoutMs: 200, source: { from: "policy" } });
  // Shorter than the limit: untouched, the call's or the tool's.
  expect(invokeDeadline({ timeoutMs: 100 }, "p", "t", null, limit).source).toEqual({ from: "call" });
  expect(invokeDeadline({}, "p", "t", 150, limit).source).toMatchObject({ from: "tool" });
  // Progress restarts the timer, up to the limit in all.
  expect(invokeDeadline({ timeoutMs: 50, resetOnProgress: true }, "p", "t", null, limit)).toMatchObject({ timeoutMs: 50, resetOnProgress: true, maxMs: 200, source: { from: "policy" } });
  expect(invokeDeadline({ timeoutMs: 10, resetOnProgress: true }, "p", "t", null, limit).source).toEqual({ from: "call" });
});

test("E_TIMEOUT says who set the deadline", () => {
  const own = timeoutError("p", "invoke() of t", "did not answer within 100 ms", 100);
  expect(own.message).toBe("plugin 'p': invoke() of t did not answer within 100 ms");
  expect(own.next).toEqual({ do: "raise-timeout", ms: 100 });
  const tool = timeoutError("p", "tool_execute of t", "did not answer within 1000 ms", 1000, { from: "tool", plugin: "p", tool: "t", ms: 1000 });
  expect(tool.message).toEndWith("(the default deadline plugin 'p' declares for t: timeout_secs 1)");
  expect(tool.details).toEqual({ defaultMs: 1000 });
  expect(tool.next).toEqual({ do: "raise-timeout", ms: 1000 });
  const policy = timeoutError("p", "x", "did not answer within 200 ms", 200, { from: "policy", plugin: "p", limit });
  expect(policy.message).toEndWith(`(calls of plugin 'p' may take at most 200 ms, the limit ${by.source}: ${by.rule} sets)`);
  expect(policy.details).toEqual({ limitMs: 200, ...by });
  expect(policy.next).toBeUndefined();
});

test("a gate's deadline: the session's, or the config's shorter limit", () => {
  expect(gateDeadline(undefined, 500, null)).toEqual({ ms: 500, byLimit: false });
  expect(gateDeadline(30_000, 500, { ms: 50, by })).toEqual({ ms: 50, byLimit: true });
  expect(gateDeadline(20, 500, { ms: 50, by })).toEqual({ ms: 20, byLimit: false });
});
