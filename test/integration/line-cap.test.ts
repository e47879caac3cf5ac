/**
 * The 64 MiB line cap (SPEC §5, §12) on each of the three paths a line takes: a request the parent
 * builds, an answer the shim turns into a reply, and whatever arrives on the protocol pipe. A line
 * over the cap costs that one message, never the stream: the same plugin host goes on serving.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/index.ts";
import { approve, fixture, openSession, refusal, tempDir, within } from "../helpers.ts";

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

test("a line for a call over the cap written straight to the protocol pipe fails that call with E_LIMIT at the cap; the stream goes on", async () => {
  const logs: [number, string][] = [];
  await using session = await openSession({ onLog: (_p, level, text) => logs.push([level, text]) });
  const plugin = await session.load(fixture("writes-protocol-pipe"));
  const pid = plugin.pid;
  const error = await refusal(within(plugin.invoke("over_cap", { mib: 70 }, { timeoutMs: 30_000 }), 40_000, "the call"));
  expect(error.code).toBe("E_LIMIT");
  expect(error.message).toMatch(/^plugin 'writes-protocol-pipe': cxagent_plugin_invoke of over_cap answered more than the read cap of 67108864 bytes \(\d+ bytes had arrived\)/);
  expect(error.details?.cap).toBe(64 * MiB);
  await Bun.sleep(500); // the rest of the line arrives and is dropped
  expect(logs.some(([level, text]) => level === 4 && /^the plugin host wrote a protocol line over its read cap \(\d+ bytes\); it was dropped$/.test(text))).toBe(true);
  expect((await within(plugin.invoke("plain"), 10_000, "the next call")).output.content).toBe("plain"); // the stream goes on
  expect(plugin.pid).toBe(pid);
}, 60_000);

test("a call's own read cap: an answer of 5 MiB with a cap of 1 MiB is E_LIMIT naming the bytes; the same plugin host serves the next call", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("big-reply"));
  const pid = plugin.pid;
  const error = await refusal(within(plugin.invoke("big_reply", { bytes: 5 * MiB }, { timeoutMs: 10_000, readCapBytes: MiB }), 20_000, "the call"));
  expect(error.code).toBe("E_LIMIT");
  expect(error.message).toContain("cxagent_plugin_invoke of big_reply answered more than the read cap of 1048576 bytes (");
  expect(error.details?.bytesRead as number).toBeGreaterThan(MiB);
  expect(error.details?.bytesRead as number).toBeLessThanOrEqual(MiB + (8 << 20)); // failed while reading, not at the end
  const next = await within(plugin.invoke("big_reply", { bytes: 10, tag: 1 }, { timeoutMs: 10_000, readCapBytes: MiB }), 15_000, "the next call");
  expect(next.output.content).toBe("bcdefghijk");
  expect(plugin.pid).toBe(pid);
  const bad = await refusal(plugin.invoke("big_reply", { bytes: 10 }, { readCapBytes: 100 }));
  expect(bad.code).toBe("E_INVALID_INPUT");
  expect(bad.message).toBe("the read cap (readCapBytes) is 100; it must be a whole number of bytes from 4096 to 67108864");
}, 60_000);

test("100 MiB with no line end on the protocol pipe: E_LIMIT naming the bytes once 64 MiB have come, the host is ended, the next call gets a fresh one", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("writes-protocol-pipe"));
  const pid = plugin.pid;
  const before = process.memoryUsage().rss;
  const error = await refusal(within(plugin.invoke("no_newline", { mib: 100 }, { timeoutMs: 60_000 }), 70_000, "the call"));
  expect(error.code).toBe("E_LIMIT");
  expect(error.message).toMatch(/^plugin 'writes-protocol-pipe': its plugin host wrote \d+ bytes on its protocol channel past the read cap of 67108864 bytes, in a line that names no call; the stream cannot be read on$/);
  expect(error.hint).toContain("the next call starts a fresh one");
  console.log(`no_newline: parent RSS ${((process.memoryUsage().rss - before) / MiB).toFixed(0)} MiB above its level before the call`);
  expect((await within(plugin.invoke("plain"), 20_000, "the next call")).output.content).toBe("plain");
  expect(plugin.pid).not.toBe(pid);
}, 120_000);

test("a plugin's readCapBytes in config.json is its calls' read cap; a call may give its own; a bad value is E_CONFIG naming it", async () => {
  using dir = tempDir();
  const configDir = join(dir.path, "config");
  const stateDir = join(dir.path, "state");
  mkdirSync(configDir);
  const write = (entry: object) => writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "big-reply": { file: "big-reply.so", path: fixture("big-reply"), ...entry } } }));
  write({ readCapBytes: MiB });
  await approve(fixture("big-reply"), stateDir);
  {
    await using session = await Session.open({ configDir, stateDir });
    const plugin = await session.load("big-reply");
    const error = await refusal(within(plugin.invoke("big_reply", { bytes: 2 * MiB }, { timeoutMs: 10_000 }), 20_000, "the call"));
    expect(error.code).toBe("E_LIMIT");
    expect(error.details?.cap).toBe(MiB);
    const own = await within(plugin.invoke("big_reply", { bytes: 2 * MiB }, { timeoutMs: 10_000, readCapBytes: 4 * MiB }), 20_000, "the call with its own cap");
    expect((own.output.content as string).length).toBe(2 * MiB);
  }
  write({ readCapBytes: 65 << 20 });
  const bad = await refusal(Session.open({ configDir, stateDir }));
  expect(bad.code).toBe("E_CONFIG");
  expect(bad.message).toContain("readCapBytes");
  expect(bad.message).toContain("must be at most 67108864 bytes (64 MiB)");
}, 60_000);
