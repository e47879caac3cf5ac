/**
 * The protocol connection over the in-memory transport: the test plays the plugin host, so the
 * startup line, replies, events, registrations and the host's end are driven line by line, with
 * no process and no timing.
 */
import { expect, test } from "bun:test";
import { type CallEvent, Connection } from "../../src/host/connection.ts";
import { memoryTransport } from "../memory-transport.ts";
import { CxError } from "../../src/errors.ts";

const MANIFEST = { pluginContract: 4, name: "fake", version: "1", tools: [{ name: "t" }] };

async function connected(hooks: { onLog?: (level: number, text: string) => void } = {}) {
  const { connect, host } = memoryTransport();
  const opening = Connection.open(connect, { label: "fake", ...hooks });
  host.write({ event: "phase", name: "dlopen" });
  host.write({ ready: true, contract: 4, manifest: MANIFEST, exports: [] });
  const { connection, ready } = await opening;
  return { connection, ready, host };
}

test("the startup line opens the connection, with the phases the host reported", async () => {
  const { connection, ready } = await connected();
  expect(ready.manifest).toEqual(MANIFEST);
  expect(connection.timings.phases.map((p) => p.name)).toEqual(["dlopen"]);
  expect(connection.alive).toBe(true);
  expect(connection.pid).toBeNull();
});

test("a refusal on the startup line is the load's error, by its reason", async () => {
  const { connect, host } = memoryTransport();
  const opening = Connection.open(connect, { label: "fake" });
  host.write({ ready: false, error: "handshake refused: contract 99", reason: "handshake" });
  const error = await opening.catch((e: CxError) => e);
  expect(error).toBeInstanceOf(CxError);
  expect((error as CxError).code).toBe("E_HANDSHAKE");
  expect((error as CxError).message).toBe("plugin 'fake' was refused: handshake refused: contract 99");
});

test("a request goes out with its id; its events reach the caller before the reply", async () => {
  const { connection, host } = await connected();
  const events: CallEvent[] = [];
  const call = connection.request({ kind: "invoke", tool: "t", arguments: { a: 1 } }, { onEvent: (e) => events.push(e) });
  const request = await host.nextRequest();
  expect(request).toEqual({ id: 1, kind: "invoke", tool: "t", arguments: { a: 1 } });
  host.write({ event: "progress", id: 1, percent: 50, text: "half" });
  host.write({ event: "stream", id: 1, text: "partial" });
  host.write({ id: 1, ok: true, result: { success: true } });
  host.write({ event: "stream", id: 1, text: "after the reply" });
  expect(await call).toEqual({ id: 1, ok: true, result: { success: true } });
  expect(events).toEqual([
    { event: "progress", percent: 50, text: "half" },
    { event: "stream", text: "partial" },
  ]);
});

test("the host's end is told once, before the pending calls fail with the cause and its last words", async () => {
  const { connection, host } = await connected();
  const order: string[] = [];
  connection.whenEnded(({ exit, hadPending }) => order.push(`ended ${exit.signal} pending=${hadPending}`));
  const call = connection.request({ kind: "invoke", tool: "t", arguments: {} }).catch((e: CxError) => {
    order.push(`call failed: ${e.code}`);
    return e;
  });
  await host.nextRequest();
  host.stderr("segfault in my_plugin.c:12");
  host.exit({ code: null, signal: "SIGSEGV" });
  const error = (await call) as CxError;
  expect(order).toEqual(["ended SIGSEGV pending=true", "call failed: E_CRASHED"]);
  expect(error.message).toBe(
    "plugin 'fake' crashed (signal SIGSEGV) while cxagent_plugin_invoke of t was running; its last output:\n  | segfault in my_plugin.c:12",
  );
  expect(error.next).toEqual({ do: "see-output", plugin: "fake" });
  expect(connection.alive).toBe(false);
  // A request after the end fails at once with the same cause.
  const late = await connection.request({ kind: "gate", tool: "t", arguments: {} }).catch((e: CxError) => e);
  expect((late as CxError).code).toBe("E_CRASHED");
});

test("a registration is refused without a process to prove descent from, and still acknowledged", async () => {
  const logs: string[] = [];
  const { host } = await connected({ onLog: (_level, text) => logs.push(text) });
  host.write({ event: "child", pid: 4242, startTime: "1", ack: 7 });
  expect(await host.nextRequest()).toEqual({ id: 1, kind: "ack", seq: 7 });
  expect(logs).toEqual(["register_child(4242) was refused: the plugin host is not a process here; nothing was recorded"]);
});

test("a protocol line over the cap is dropped and logged; a line that is not JSON costs that line only", async () => {
  const logs: string[] = [];
  const { connection, host } = await connected({ onLog: (_level, text) => logs.push(text) });
  const call = connection.request({ kind: "invoke", tool: "t", arguments: {} });
  await host.nextRequest();
  host.write('{"id":1,"ok":true,"result":{"huge":"', 70 << 20);
  host.write("not json at all");
  host.write({ id: 1, ok: true, result: { success: true } });
  expect(await call).toEqual({ id: 1, ok: true, result: { success: true } });
  expect(logs).toEqual([
    `the plugin host wrote a protocol line over its read cap (${36 + (70 << 20)} bytes); it was dropped`,
    "the plugin host wrote a line that is not JSON: not json at all",
  ]);
});

test("shutdown sends stop, closes the host's input and waits for its end", async () => {
  const { connection, host } = await connected();
  const stopping = connection.shutdown({ graceMs: 1000 });
  expect(await host.nextRequest()).toEqual({ id: 1, kind: "stop" });
  host.write({ id: 1, ok: true });
  while (!host.inputClosed) await Bun.sleep(1);
  host.exit({ code: 0 });
  expect(await stopping).toBeNull();
  expect(connection.alive).toBe(false);
});

test("what the host left is ended when it ends, whether or not anyone listens for the pids gone", async () => {
  const { connection, host } = await connected();
  host.exit({ code: 0 });
  await connection.exited;
  expect(host.released).toBe(1);
});

test("a host that ends during start-up is said to have ended in its phase, in its kind's words", async () => {
  for (const [kind, phase, words] of [["native", "dlopen", "loading the library (its constructors)"], ["module", "import", "importing the module (its top-level code)"], ["native", "cxagent_plugin_describe", "cxagent_plugin_describe"]] as const) {
    const { connect, host } = memoryTransport();
    const opening = Connection.open(connect, { label: "fake", kind });
    host.write({ event: "phase", name: phase });
    host.exit({ code: 3 });
    const error = await opening.catch((e: CxError) => e);
    expect((error as CxError).message).toStartWith(`plugin 'fake' crashed (exit code 3) during ${words}`);
  }
});
