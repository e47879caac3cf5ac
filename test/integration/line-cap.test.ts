/**
 * The 64 MiB line cap (SPEC §5, §12) on each of the three paths a line takes: a request the parent
 * builds, an answer the shim turns into a reply, and whatever arrives on the protocol pipe. A line
 * over the cap costs that one message, never the stream: the same plugin host goes on serving.
 */
import { expect, test } from "bun:test";
import { fixture, openSession, refusal, within } from "../helpers.ts";

const MiB = 1 << 20;

test("an answer of 70 MiB is E_BAD_REPLY, and the next call on the same plugin host works", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("big-reply"));
  const pid = plugin.pid;
  const error = await refusal(within(plugin.invoke("big_reply", { bytes: 70 * MiB }, { timeoutMs: 10_000 }), 20_000, "the call"));
  expect(error.code).toBe("E_BAD_REPLY");
  expect(error.message).toContain("cxagent_plugin_invoke returned more than the line cap allows");
  expect(error.message.length).toBeLessThan(1000); // a bounded preview, not the answer
  const next = await within(plugin.invoke("big_reply", { bytes: 10, tag: 1 }, { timeoutMs: 10_000 }), 15_000, "the next call");
  expect(next.output.content).toBe("bcdefghijk");
  expect(plugin.pid).toBe(pid);
}, 60_000);

test("an argument of 65 MiB is refused at once, before anything is sent; the plugin host goes on", async () => {
  const logs: string[] = [];
  await using session = await openSession({ onLog: (_p, _l, text) => logs.push(text) });
  const echo = await session.load(fixture("echo"));
  const pid = echo.pid;
  const error = await refusal(within(echo.invoke("echo_this", { text: "x".repeat(65 * MiB) }, { timeoutMs: 10_000 }), 20_000, "the call"));
  expect(error.code).toBe("E_INVALID_INPUT");
  expect(error.message).toMatch(/^the request for cxagent_plugin_invoke of echo_this is \d+ characters, over the 64 MiB line cap$/);
  expect((await within(echo.invoke("echo_this", { n: 1 }), 10_000, "the next call")).output.arguments).toEqual({ n: 1 });
  expect(echo.pid).toBe(pid);
  expect(logs.filter((l) => l.includes("request"))).toEqual([]); // the plugin host never saw it
}, 60_000);

test("a line over the cap written straight to the protocol pipe is dropped and logged; the call gets its real answer", async () => {
  const logs: [number, string][] = [];
  await using session = await openSession({ onLog: (_p, level, text) => logs.push([level, text]) });
  const plugin = await session.load(fixture("writes-protocol-pipe"));
  const pid = plugin.pid;
  const result = await within(plugin.invoke("over_cap", { mib: 70 }, { timeoutMs: 30_000 }), 40_000, "the call");
  expect(result.output.content).toBe("the real answer");
  const wrote = result.output.wrote as number;
  expect(wrote).toBeGreaterThan(70 * MiB);
  expect(logs).toContainEqual([4, `the plugin host wrote a protocol line over the 64 MiB cap (${wrote} bytes); it was dropped`]);
  expect((await within(plugin.invoke("plain"), 10_000, "the next call")).output.content).toBe("plain"); // the stream goes on
  expect(plugin.pid).toBe(pid);
}, 60_000);
