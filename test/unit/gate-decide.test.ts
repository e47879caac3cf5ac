/**
 * src/host/gate.ts's decide alone: the manifest's `gated` is the ceiling, a "dynamic" tool's gate
 * answer may only narrow beneath it, any gate failure asks with no Always, and a forced ask
 * (tools.ask) adds a question and takes Always and grants away. The gate export driven through
 * real plugin hosts is in test/integration/gate.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { decide, GATE_MS, genericDisplay } from "../../src/host/gate.ts";
import type { Tool } from "../../src/protocol/manifest.ts";

const tool = (gated: boolean | "dynamic", alwaysAskable = true): Tool => ({ name: "rm", description: "", inputSchema: { type: "object" }, gated, alwaysAskable }) as Tool;
const RULE = "plugin fs tool rm";
const ARGS = { path: "x" };
const SHOWN = 'fs wants to run rm with {"path":"x"}';
const asked: string[] = [];
const grantedFor = (rule: string): boolean => (asked.push(rule), rule === RULE);
const none = () => false;

test("the display: the arguments' JSON when there are any, cut at 200 characters", () => {
  expect(GATE_MS).toBe(500);
  expect(genericDisplay("fs", "rm", {})).toBe("fs wants to run rm");
  expect(genericDisplay("fs", "rm", undefined)).toBe("fs wants to run rm");
  expect(genericDisplay("fs", "rm", ARGS)).toBe(SHOWN);
  const long = genericDisplay("fs", "rm", { a: "y".repeat(300) });
  expect(long.length).toBeLessThan(230);
  expect(long.startsWith('fs wants to run rm with {"a":"yyy')).toBe(true);
  expect(long.endsWith("…")).toBe(true);
});

describe("from the manifest", () => {
  test("gated false: never asks, no rule", () => {
    expect(decide("fs", tool(false), ARGS, null, grantedFor)).toEqual({ ask: false, display: null, alwaysOffered: false, rule: null, source: "manifest", granted: false, forcedBy: null });
  });
  test("gated true: asks; Always as the manifest allows it, and then a stored grant answers", () => {
    expect(decide("fs", tool(true), ARGS, null, grantedFor)).toEqual({ ask: true, display: SHOWN, alwaysOffered: true, rule: RULE, source: "manifest", granted: true, forcedBy: null });
    expect(decide("fs", tool(true), ARGS, null, none)).toEqual({ ask: true, display: SHOWN, alwaysOffered: true, rule: RULE, source: "manifest", granted: false, forcedBy: null });
    asked.length = 0;
    expect(decide("fs", tool(true, false), ARGS, null, grantedFor)).toEqual({ ask: true, display: SHOWN, alwaysOffered: false, rule: RULE, source: "manifest", granted: false, forcedBy: null });
    expect(asked).toEqual([]); // no Always: the grants are not even looked at
  });
});

describe("a dynamic tool's gate", () => {
  const failed = (why: string) => ({
    ask: true,
    display: `${SHOWN} — its permission check did not answer (${why}), so it cannot be allowed for always`,
    alwaysOffered: false,
    rule: RULE,
    source: "gate-failed" as const,
    granted: false,
    forcedBy: null,
  });
  const gate = (answer: Parameters<typeof decide>[3], alwaysAskable = true, granted = grantedFor) => decide("fs", tool("dynamic", alwaysAskable), ARGS, answer, granted);

  test("NULL: no question", () => {
    expect(gate({ kind: "null" })).toEqual({ ask: false, display: null, alwaysOffered: false, rule: null, source: "gate", granted: false, forcedBy: null });
  });
  test("every way it fails asks, with no Always, naming why", () => {
    expect(gate(null)).toEqual(failed("no answer"));
    expect(gate({ kind: "failed", why: "it took longer than 500 ms" })).toEqual(failed("it took longer than 500 ms"));
    expect(gate({ kind: "value", value: null })).toEqual(failed("it returned JSON null, which is not NULL"));
    expect(gate({ kind: "value", value: [1] })).toEqual(failed("it returned an array, not an object"));
    expect(gate({ kind: "value", value: "yes" })).toEqual(failed("it returned string, not an object"));
    expect(gate({ kind: "value", value: {} })).toEqual(failed("its answer has no string display"));
    expect(gate({ kind: "value", value: { display: 3 } })).toEqual(failed("its answer has no string display"));
    expect(gate({ kind: "value", value: { display: "d", alwaysAskable: "yes" } })).toEqual(failed("its alwaysAskable is not a boolean"));
    expect(gate({ kind: "value", value: { display: "d", sandbox: { bogus: 1 } } })).toEqual(failed("its sandbox lease is not a sandbox (sandbox declares 'bogus', which this build does not service)"));
    expect(gate({ kind: "value", value: { display: "d", sandbox: { net: 5, memoryMiB: 1 } } })).toEqual(failed('its sandbox lease is not a sandbox (net: must be "none", "any" or {"connect": [{"port": N}], "bind": [...]}, not number 5; memoryMiB: memoryMiB must be at least 64)'));
  });
  test("an answer: its display; Always only where both the manifest and the gate allow it, then a grant answers", () => {
    const answered = (alwaysOffered: boolean, granted: boolean) => ({ ask: true, display: "delete x?", alwaysOffered, rule: RULE, source: "gate" as const, granted, forcedBy: null });
    expect(gate({ kind: "value", value: { display: "delete x?" } })).toEqual(answered(true, true));
    expect(gate({ kind: "value", value: { display: "delete x?", alwaysAskable: true } })).toEqual(answered(true, true));
    expect(gate({ kind: "value", value: { display: "delete x?" } }, true, none)).toEqual(answered(true, false));
    expect(gate({ kind: "value", value: { display: "delete x?", alwaysAskable: false } })).toEqual(answered(false, false));
    expect(gate({ kind: "value", value: { display: "delete x?", alwaysAskable: true } }, false)).toEqual(answered(false, false));
  });
  test("a sandbox lease: kept as the schema reads it", () => {
    expect(gate({ kind: "value", value: { display: "d", sandbox: { net: "none" } } })).toEqual({
      ask: true, display: "d", alwaysOffered: true, rule: RULE, source: "gate", granted: true, forcedBy: null,
      lease: { fs: { read: [], write: [] }, net: "none" },
    });
  });
});

describe("a forced ask", () => {
  const forcedBy = { source: "/p/.cxagent/config.json", rule: "plugins.fs.tools.ask[0]", pattern: "rm", kind: "ask" as const };
  test("keeps the gate's display and lease, takes Always and the grant away", () => {
    expect(decide("fs", tool("dynamic"), ARGS, { kind: "value", value: { display: "delete x?", sandbox: {} } }, grantedFor, forcedBy)).toEqual({
      ask: true, display: "delete x?", alwaysOffered: false, rule: RULE, source: "gate", granted: false, forcedBy,
      lease: { fs: { read: [], write: [] }, net: "none" },
    });
    expect(decide("fs", tool(true), ARGS, null, grantedFor, forcedBy)).toEqual({ ask: true, display: SHOWN, alwaysOffered: false, rule: RULE, source: "manifest", granted: false, forcedBy });
  });
});
