/**
 * The stdio front (src/mcp/stdio-front.ts) in this process: the real transport (stdio.ts) reading
 * lines from a stream, the real hub serving a real session's plugins (lazily: no host runs unless a
 * call needs one), and the MCP SDK's real `Server` where the front leaves a message to it. Which
 * messages the front answers is told by the note the SDK's loading writes; what it answers is
 * compared with what the SDK's `Server` answers to the same request. The same through a real
 * `cxagent mcp` process: test/mcp/stdio-front.test.ts and stdio-front-routing.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { McpHub } from "../../src/mcp/hub.ts";
import { LazyPlugin } from "../../src/mcp/lazy.ts";
import { StdioTransport } from "../../src/mcp/stdio.ts";
import { StdioFront } from "../../src/mcp/stdio-front.ts";
import { Session } from "../../src/session/session.ts";
import { approve, CALCULATOR, until } from "../helpers.ts";

const LOADED = "loading the MCP SDK's server for ";
const INFO = { name: "front-test", version: "1.0" };
const PLAIN_INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: INFO };

let home = "";
let session: Session;
let calculator: LazyPlugin;
let moduleFolder = "";
let modulePlugin: LazyPlugin;
let waiter: LazyPlugin;
let release = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-front-"));
  const state = join(home, "state");
  mkdirSync(state, { mode: 0o700 });
  moduleFolder = join(home, "changing");
  mkdirSync(moduleFolder);
  writeFileSync(join(moduleFolder, "changing.ts"), "export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: 'x' } }; } };");
  writeFileSync(join(moduleFolder, "changing.plugin.json"), JSON.stringify({ pluginContract: 4, name: "changing", version: "1.0.0", tools: [{ name: "changing_work" }] }));
  const waiterFolder = join(home, "waiter");
  release = join(home, "release");
  mkdirSync(waiterFolder);
  writeFileSync(
    join(waiterFolder, "waiter.ts"),
    `import { existsSync } from "node:fs";
export default { start() {}, stop() {}, async invoke() {
  while (!existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 10));
  return { success: true, output: { content: "released" } };
} };`,
  );
  writeFileSync(join(waiterFolder, "waiter.plugin.json"), JSON.stringify({ pluginContract: 4, name: "waiter", version: "1.0.0", tools: [{ name: "wait_here" }] }));
  await approve(waiterFolder, state);
  await approve(CALCULATOR, state);
  await approve(moduleFolder, state);
  session = await Session.open({ cwd: home, configDir: join(home, "config"), stateDir: state, reap: false });
  calculator = new LazyPlugin(session, CALCULATOR, session.inspect(CALCULATOR), null);
  modulePlugin = new LazyPlugin(session, moduleFolder, session.inspect(moduleFolder), null);
  waiter = new LazyPlugin(session, waiterFolder, session.inspect(waiterFolder), null);
});
afterAll(async () => {
  await calculator.close();
  await modulePlugin.close();
  await waiter.close();
  await session.close();
  rmSync(home, { recursive: true, force: true });
});

/** A front on a transport of its own, over a hub serving the calculator (and `plugins`). */
async function open(plugins: LazyPlugin[] = []) {
  const input = new PassThrough();
  const frames: string[] = [];
  const notes: string[] = [];
  const hub = new McpHub({ session, plugins: [calculator, ...plugins], rules: [], version: "9.9.9", note: (l) => notes.push(l), warn: () => {}, logToStderr: () => {} });
  const transport = new StdioTransport(input, (frame) => frames.push(frame));
  let closedBefore = 0;
  transport.onclose = () => void closedBefore++;
  const front = new StdioFront(hub, transport, (l) => notes.push(l));
  await transport.start();
  const messages = () => frames.map((f) => JSON.parse(f));
  const peer = {
    front,
    transport,
    frames,
    notes,
    messages,
    closedBefore: () => closedBefore,
    send: (m: object | string) => void input.write(typeof m === "string" ? m : JSON.stringify(m) + "\n"),
    /** The answer to request `id`. */
    answer: async (id: unknown) => {
      await until(() => messages().some((m) => m.id === id && ("result" in m || "error" in m)), 10_000, `the answer to ${String(id)}; frames:\n${frames.join("")}`);
      return messages().find((m) => m.id === id && ("result" in m || "error" in m));
    },
    /** Why the SDK's server was loaded (null: it was not). */
    loaded: () => {
      const lines = notes.filter((l) => l.startsWith(LOADED));
      expect(lines.length).toBeLessThanOrEqual(1);
      return lines[0]?.slice(LOADED.length) ?? null;
    },
    /** Sends `messages`, then a ping, and waits for the ping's answer: everything before it was read. */
    async settle(...sent: (object | string)[]) {
      for (const m of sent) peer.send(m);
      const id = `settle-${Math.random()}`;
      peer.send({ jsonrpc: "2.0", id, method: "ping" });
      await peer.answer(id);
    },
    async initialize(params: object = PLAIN_INIT) {
      peer.send({ jsonrpc: "2.0", id: 0, method: "initialize", params });
      return peer.answer(0);
    },
  };
  return peer;
}

describe("answered by the front, without the SDK", () => {
  test("ping, tools/list, setLevel and a method nothing serves, in the SDK's key order; a notification of nothing running goes nowhere", async () => {
    const p = await open();
    await p.initialize();
    await p.settle(
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 42 } },
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: "two", method: "ping", params: {} },
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
      { jsonrpc: "2.0", id: 4, method: "tools/list", params: {} },
      { jsonrpc: "2.0", id: 5, method: "logging/setLevel", params: { level: "debug" } },
      { jsonrpc: "2.0", id: 6, method: "resources/list" },
      { jsonrpc: "2.0", id: 7, method: "resources/list", params: {} },
    );
    expect(p.loaded()).toBeNull();
    expect(p.frames).toContain('{"result":{},"jsonrpc":"2.0","id":1}\n');
    expect(p.frames).toContain('{"result":{},"jsonrpc":"2.0","id":"two"}\n');
    expect((await p.answer(3)).result.tools.map((t: { name: string }) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
    expect((await p.answer(4)).result).toEqual((await p.answer(3)).result);
    expect(p.frames).toContain('{"result":{},"jsonrpc":"2.0","id":5}\n');
    expect(p.frames).toContain('{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found"}}\n');
    expect((await p.answer(7)).error.code).toBe(-32601);
    // Nothing but the answers: no notification, nothing for the notifications.
    expect(p.messages().filter((m) => !("id" in m))).toEqual([]);
    expect(p.messages()).toHaveLength(8 + 1); // initialize, 7 answers, the ping of settle
    expect(p.notes).toContain("tools/list from front-test: 3 tools");
  });

  test("initialize: the version asked when known, else the newest; what the client said, read as the SDK reads it", async () => {
    const p = await open();
    const init = await p.initialize({ protocolVersion: "2024-11-05", capabilities: { elicitation: {} }, clientInfo: INFO });
    expect(init.result.protocolVersion).toBe("2024-11-05");
    expect(init.result.serverInfo).toEqual({ name: "cxagent", version: "9.9.9" });
    expect(init.result.instructions).toContain("calc_multiply");
    expect(p.front.getClientCapabilities()).toEqual({ elicitation: { form: {} } });
    expect(p.front.getClientVersion()).toEqual(INFO);
    expect(p.loaded()).toBeNull();
    const q = await open();
    expect((await q.initialize({ ...PLAIN_INIT, protocolVersion: "1999-01-01" })).result.protocolVersion).toBe("2025-11-25");
    const none = await open();
    expect(none.front.getClientCapabilities()).toBeUndefined();
    expect(none.front.getClientVersion()).toBeUndefined();
  });

  test("a plain tools/call is the front's; a cancellation of one in flight abandons it, without the SDK", async () => {
    const p = await open();
    await p.initialize();
    const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "calc_multiply", arguments: { a: 6, b: 7 } } });
    p.send(call(10));
    p.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 10, reason: "changed my mind" } });
    p.send(call(11));
    expect((await p.answer(11)).result.content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
    await p.settle();
    await Bun.sleep(100);
    expect(p.messages().filter((m) => m.id === 10)).toEqual([]);
    expect(p.loaded()).toBeNull();
  });

  test("a tools/list cursor the server did not give is the same error the SDK's server answers", async () => {
    const p = await open();
    await p.initialize();
    p.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "not-ours" } });
    const mine = await p.answer(1);
    expect(p.loaded()).toBeNull();
    p.send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { cursor: "not-ours", _meta: {} } });
    const sdk = await p.answer(2);
    expect(p.loaded()).toBe("tools/list");
    expect(mine.error).toEqual(sdk.error);
    expect(mine.error.code).toBe(-32602);
  });
});

describe("left to the SDK's server", () => {
  const cases: [string, (object | string)[], string][] = [
    ["a ping with params", [{ jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } }], "ping"],
    ["a ping with _meta", [{ jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: {} } }], "ping"],
    ["a ping whose params are an array", [{ jsonrpc: "2.0", id: 1, method: "ping", params: [] }], "ping"],
    ["a ping whose params are null", [{ jsonrpc: "2.0", id: 1, method: "ping", params: null }], "ping"],
    ["a ping with a key JSON-RPC does not have", [{ jsonrpc: "2.0", id: 1, method: "ping", extra: true }], "ping"],
    ["a ping whose id is not a whole number", [{ jsonrpc: "2.0", id: 1.5, method: "ping" }], "ping"],
    ["a ping whose id is null", [{ jsonrpc: "2.0", id: null, method: "ping" }], "ping"],
    ["a ping whose id is true", [{ jsonrpc: "2.0", id: true, method: "ping" }], "ping"],
    ["a ping of another JSON-RPC", [{ jsonrpc: "1.0", id: 1, method: "ping" }], "ping"],
    ["a ping with no JSON-RPC", [{ id: 1, method: "ping" }], "ping"],
    ["a method that is not a string", [{ jsonrpc: "2.0", id: 1, method: 7 }], "a message it checks"],
    ["null", ["null\n"], "a message it checks"],
    ["an array", ["[1]\n"], "a message it checks"],
    ["a method no word can name, with _meta", [{ jsonrpc: "2.0", id: 1, method: "no such method", params: { _meta: {} } }], "a message it checks"],
    ["a method name too long to say, with _meta", [{ jsonrpc: "2.0", id: 1, method: "m".repeat(65), params: { _meta: {} } }], "a message it checks"],
    ["a method name of 64 characters, with _meta", [{ jsonrpc: "2.0", id: 1, method: "m".repeat(64), params: { _meta: {} } }], "m".repeat(64)],
    ["a method of every character a name may have, with _meta", [{ jsonrpc: "2.0", id: 1, method: "x/y.z-w_1", params: { _meta: {} } }], "x/y.z-w_1"],
    ["a method name that ends in a space, with _meta", [{ jsonrpc: "2.0", id: 1, method: "ping ", params: { _meta: {} } }], "a message it checks"],
    ["a method name that starts with a space, with _meta", [{ jsonrpc: "2.0", id: 1, method: " ping", params: { _meta: {} } }], "a message it checks"],
    ["a tools/list whose cursor is not a string", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 5 } }], "tools/list"],
    ["a tools/list with another key", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { page: 2 } }], "tools/list"],
    ["a tools/list with a cursor and another key", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "a", page: 2 } }], "tools/list"],
    ["a setLevel with another key", [{ jsonrpc: "2.0", id: 1, method: "logging/setLevel", params: { level: "debug", x: 1 } }], "logging/setLevel"],
    ["a setLevel of no level", [{ jsonrpc: "2.0", id: 1, method: "logging/setLevel", params: { level: "loud" } }], "logging/setLevel"],
    ["a setLevel without params", [{ jsonrpc: "2.0", id: 1, method: "logging/setLevel" }], "logging/setLevel"],
    ["notifications/initialized with params", [{ jsonrpc: "2.0", method: "notifications/initialized", params: { x: 1 } }], "notifications/initialized"],
    ["a notification with a key JSON-RPC does not have", [{ jsonrpc: "2.0", method: "notifications/initialized", extra: 1 }], "notifications/initialized"],
    ["a notification with _meta", [{ jsonrpc: "2.0", method: "notifications/roots/list_changed", params: { _meta: {} } }], "notifications/roots/list_changed"],
    ["an answer from the client", [{ jsonrpc: "2.0", id: 77, result: {} }], "an answer from the client"],
    ["an error from the client", [{ jsonrpc: "2.0", id: 77, error: { code: 1, message: "x" } }], "an answer from the client"],
    ["prompts/list", [{ jsonrpc: "2.0", id: 1, method: "prompts/list" }], "prompts/list"],
    ["prompts/get", [{ jsonrpc: "2.0", id: 1, method: "prompts/get", params: { name: "x" } }], "prompts/get"],
    ["a prompts/list whose params read as an initialize's", [{ jsonrpc: "2.0", id: 1, method: "prompts/list", params: PLAIN_INIT }], "prompts/list"],
    ["an empty method, with _meta", [{ jsonrpc: "2.0", id: 1, method: "", params: { _meta: {} } }], "a message it checks"],
    ["tools/call without arguments' object", [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "calc_add", arguments: "1 2" } }], "tools/call"],
  ];
  test.each(cases)("%s", async (_, messages, why) => {
    const p = await open();
    await p.initialize();
    await p.settle(...messages);
    expect(p.loaded()).toBe(why);
  });

  test("an id the SDK's server answers is answered whatever it is, the empty string too", async () => {
    const p = await open();
    await p.initialize();
    await p.settle({ jsonrpc: "2.0", id: "", method: "ping", params: { x: 1 } });
    expect(p.loaded()).toBe("ping");
    expect((await p.answer("")).result).toEqual({});
  });

  test("the front's client is the user's own: a gate's question offers Allow always, on the front's path and on the SDK's", async () => {
    for (const meta of [null, { note: "the SDK's" }]) {
      const p = await open();
      await p.initialize({ ...PLAIN_INIT, capabilities: { elicitation: {} } });
      await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" });
      p.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "calc_divide", arguments: { a: 1, b: 0 }, ...(meta ? { _meta: meta } : {}) } });
      await until(() => p.messages().some((m) => m.method === "elicitation/create"), 10_000, "the question");
      const ask = p.messages().find((m) => m.method === "elicitation/create");
      expect(ask.params.requestedSchema.properties.decision.enum).toEqual(["allow_once", "allow_always", "deny"]);
      p.send({ jsonrpc: "2.0", id: ask.id, result: { action: "decline" } });
      expect((await p.answer(1)).result.isError).toBe(true);
      expect(p.loaded()).toBe(meta ? "tools/call" : "a request to the client");
    }
  });

  test("an initialize out of the ordinary is the SDK's, answered as the front answers a plain one", async () => {
    const plain = await open();
    const mine = await plain.initialize();
    for (const params of [{ ...PLAIN_INIT, capabilities: { tasks: {} } }, { ...PLAIN_INIT, _meta: {} }]) {
      const odd = await open();
      const theirs = await odd.initialize(params);
      expect(odd.loaded()).toBe("initialize");
      expect(theirs).toEqual(mine);
    }
  });

  test("once the SDK's server is there, a second initialize and every notification are its own", async () => {
    const p = await open();
    await p.initialize({ ...PLAIN_INIT, capabilities: { elicitation: {} } });
    await p.settle({ jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } });
    expect(p.loaded()).toBe("ping");
    // Told the client's initialize: the SDK's server knows it as the front did (the answer to it dropped).
    expect(p.front.getClientCapabilities()).toEqual({ elicitation: { form: {} } });
    expect(p.front.getClientVersion()).toEqual(INFO);
    expect(p.messages().filter((m) => m.id === 0)).toHaveLength(1);
    expect(p.frames.filter((f) => f.includes("replayed"))).toEqual([]);
    p.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { ...PLAIN_INIT, clientInfo: { name: "again", version: "2" } } });
    expect((await p.answer(2)).result.protocolVersion).toBe("2025-06-18");
    expect(p.front.getClientVersion()).toEqual({ name: "again", version: "2" });
  });

  test("once the SDK's server is there, a cancellation of a call it serves reaches it: that call is not answered", async () => {
    const p = await open([waiter]);
    await p.initialize();
    await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" });
    p.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "wait_here", arguments: {}, _meta: { note: "the SDK's" } } });
    await until(() => waiter.started, 10_000, "the call to start");
    expect(p.loaded()).toBe("tools/call");
    await p.settle({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "no longer needed" } });
    writeFileSync(release, "");
    p.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "wait_here", arguments: {}, _meta: { note: "the SDK's" } } });
    expect((await p.answer(2)).result.content).toEqual([{ type: "text", text: "released" }]);
    await Bun.sleep(100);
    expect(p.messages().filter((m) => m.id === 1)).toEqual([]);
  });

  test("an elicitation loads the SDK's server, which asks the client the front initialized; its answer comes back", async () => {
    const p = await open();
    await p.initialize({ ...PLAIN_INIT, capabilities: { elicitation: {} } });
    const asked = p.front.elicitInput({ message: "Proceed?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } });
    await until(() => p.messages().some((m) => m.method === "elicitation/create"), 10_000, "the elicitation");
    expect(p.loaded()).toBe("a request to the client");
    const request = p.messages().find((m) => m.method === "elicitation/create");
    expect(request.params.message).toBe("Proceed?");
    p.send({ jsonrpc: "2.0", id: request.id, result: { action: "accept", content: { ok: true } } });
    expect(await asked).toEqual({ action: "accept", content: { ok: true } });
  });
});

describe("notifications to the client, and the end", () => {
  test("list_changed and log messages as the SDK's server writes them; a list change only once the client said initialized", async () => {
    const p = await open([modulePlugin]);
    await p.initialize();
    await p.front.sendToolListChanged();
    await p.front.sendLoggingMessage({ level: "info", logger: "x", data: "hello" });
    expect(p.frames.slice(-2)).toEqual(['{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n', '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"x","data":"hello"}}\n']);
    // The hub tells a changed plugin's list only to a client that finished initializing.
    const before = p.frames.length;
    writeFileSync(join(moduleFolder, "changing.ts"), "export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: 'y' } }; } };");
    modulePlugin.recheckSoon();
    await until(() => modulePlugin.tools.length === 0, 10_000, "the change to be seen");
    await Bun.sleep(100);
    expect(p.frames.length).toBe(before);
    await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" });
    await approve(moduleFolder, join(home, "state"));
    modulePlugin.recheckSoon();
    await until(() => p.messages().slice(before).some((m) => m.method === "notifications/tools/list_changed"), 10_000, "list_changed");
    expect(p.loaded()).toBeNull();
  }, 30_000);

  test("the SDK's server loaded before the client said initialized: not ready until it does, then ready", async () => {
    const p = await open([modulePlugin]);
    await p.initialize();
    await p.settle({ jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } });
    expect(p.loaded()).toBe("ping");
    const before = p.frames.length;
    writeFileSync(join(moduleFolder, "changing.ts"), `export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: '${Math.random()}' } }; } };`);
    modulePlugin.recheckSoon();
    await until(() => modulePlugin.tools.length === 0, 10_000, "the change to be seen");
    await Bun.sleep(100);
    expect(p.frames.length).toBe(before);
    await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" });
    const ready = p.frames.length;
    await approve(moduleFolder, join(home, "state"));
    modulePlugin.recheckSoon();
    await until(() => p.frames.length > ready, 10_000, "list_changed");
    expect(p.messages().at(-1)).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    await until(() => modulePlugin.tools.length > 0, 10_000, "the tools to come back");
  });

  test("the front's client is the user's own: one that shows forms is asked to approve a plugin's changed files", async () => {
    const p = await open([modulePlugin]);
    await p.initialize({ ...PLAIN_INIT, capabilities: { elicitation: {} } });
    await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" });
    writeFileSync(join(moduleFolder, "changing.ts"), `export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: '${Math.random()}' } }; } };`);
    modulePlugin.recheckSoon();
    await until(() => p.messages().some((m) => m.method === "elicitation/create"), 10_000, "the question");
    const ask = p.messages().find((m) => m.method === "elicitation/create");
    expect(ask.params.message).toContain("The files of plugin 'changing'");
    p.send({ jsonrpc: "2.0", id: ask.id, result: { action: "accept", content: { approve: true } } });
    await until(() => modulePlugin.tools.length > 0, 10_000, "the tools to come back");
  });

  test("the initialized said before the SDK's server came is told to it: the client is ready for it", async () => {
    const p = await open([modulePlugin]);
    await p.initialize();
    await p.settle({ jsonrpc: "2.0", method: "notifications/initialized" }, { jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } });
    expect(p.loaded()).toBe("ping");
    const before = p.frames.length;
    writeFileSync(join(moduleFolder, "changing.ts"), `export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: '${Math.random()}' } }; } };`);
    modulePlugin.recheckSoon();
    await until(() => p.frames.length > before, 10_000, "list_changed");
    await approve(moduleFolder, join(home, "state"));
    modulePlugin.recheckSoon();
    await until(() => modulePlugin.tools.length > 0, 10_000, "the tools to come back");
  });

  test("close closes the transport: what the transport's owner set runs, and nothing more is written", async () => {
    const p = await open();
    await p.initialize();
    await p.front.close();
    expect(p.closedBefore()).toBe(1);
    const before = p.frames.length;
    await p.front.sendToolListChanged();
    p.send({ jsonrpc: "2.0", id: 1, method: "ping" });
    await Bun.sleep(50);
    expect(p.frames.length).toBe(before);
  });
});
