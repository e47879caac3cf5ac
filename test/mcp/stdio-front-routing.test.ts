/**
 * Which messages the stdio front (src/mcp/stdio-front.ts) answers itself and which it leaves to
 * the MCP SDK's `Server`, told by the --verbose line the SDK's loading writes ("loading the MCP
 * SDK's server for <why>"): one real `cxagent mcp` per case, since the SDK is loaded once. What the
 * front answers is what the SDK's server answers, to the byte where both answer.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR } from "../helpers.ts";
import { approvedState, raw } from "./_mcp.ts";

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-front-routing-"));
  state = await approvedState(home, [CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const LOADED = "loading the MCP SDK's server for ";
const INFO = { name: "raw", version: "1" };

/** Why the SDK's server was loaded, from the server's stderr (null: it was not). */
const loadedFor = (stderr: string) => {
  const lines = stderr.split("\n").filter((l) => l.includes(LOADED));
  expect(lines.length).toBeLessThanOrEqual(1);
  return lines[0] ? lines[0].slice(lines[0].indexOf(LOADED) + LOADED.length).trim() : null;
};

/**
 * Starts a server, initializes it (plainly unless told), sends `messages`, then a ping whose answer
 * says all before it was read; returns the lines, the messages and why the SDK loaded.
 */
async function route(messages: (object | string)[], options: { initialize?: object | null } = {}) {
  const server = raw([CALCULATOR, "--verbose"], { state });
  if (options.initialize !== null) {
    server.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: options.initialize ?? { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: INFO } });
    await server.response(0);
  }
  for (const m of messages) typeof m === "string" ? server.sendText(m) : server.send(m);
  server.send({ jsonrpc: "2.0", id: "last", method: "ping" });
  await server.response("last");
  expect(await server.end()).toBe(0);
  return { lines: server.lines, messages: server.messages(), stderr: server.stderr(), loaded: loadedFor(server.stderr()), answer: (id: unknown) => server.messages().find((m) => m.id === id) };
}

describe("served by the front, no SDK loaded", () => {
  test("ping, tools/list (with a cursor), setLevel, a notification of nothing running, a string id: answered in the SDK's key order", async () => {
    const r = await route([
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: "two", method: "ping", params: {} },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 42 } },
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} },
      { jsonrpc: "2.0", id: 4, method: "logging/setLevel", params: { level: "debug" } },
      { jsonrpc: "2.0", id: 5, method: "resources/list" },
    ]);
    expect(r.loaded).toBeNull();
    expect(r.lines).toContain('{"result":{},"jsonrpc":"2.0","id":1}');
    expect(r.lines).toContain('{"result":{},"jsonrpc":"2.0","id":"two"}');
    expect(r.answer(3).result.tools).toHaveLength(3);
    expect(r.answer(4).result).toEqual({});
    expect(r.answer(5).error).toEqual({ code: -32601, message: "Method not found" });
    // The client as the front's initialize read it, named in the --verbose note of tools/list.
    expect(r.stderr).toContain("tools/list from raw: 3 tools");
    expect(r.messages.filter((m) => m.id === undefined)).toEqual([]);
  });

  test("an unknown protocol version is answered with the newest; a known one as asked; the calculator's instructions", async () => {
    const odd = await route([], { initialize: { protocolVersion: "1999-01-01", capabilities: {}, clientInfo: INFO } });
    expect(odd.loaded).toBeNull();
    expect(odd.answer(0).result.protocolVersion).toBe("2025-11-25");
    expect(odd.answer(0).result.instructions).toContain("calc_add");
    const old = await route([], { initialize: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: INFO } });
    expect(old.answer(0).result.protocolVersion).toBe("2024-11-05");
  });
});

describe("left to the SDK's server, loaded once for it", () => {
  const cases: [string, (object | string)[], string][] = [
    ["a ping with params", [{ jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } }], "ping"],
    ["a ping with _meta", [{ jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: {} } }], "ping"],
    ["a ping whose params are an array", [{ jsonrpc: "2.0", id: 1, method: "ping", params: [] }], "ping"],
    ["a ping with a key JSON-RPC does not have", [{ jsonrpc: "2.0", id: 1, method: "ping", extra: true }], "ping"],
    ["a ping whose id is not a whole number", [{ jsonrpc: "2.0", id: 1.5, method: "ping" }], "ping"],
    ["a ping whose id is null", [{ jsonrpc: "2.0", id: null, method: "ping" }], "ping"],
    ["a ping of another JSON-RPC", [{ jsonrpc: "1.0", id: 1, method: "ping" }], "ping"],
    ["a method that is not a string", [{ jsonrpc: "2.0", id: 1, method: 7 }], "a message it checks"],
    ["a method no word can name, with _meta", [{ jsonrpc: "2.0", id: 1, method: "no such method", params: { _meta: {} } }], "a message it checks"],
    ["a method name too long to say, with _meta", [{ jsonrpc: "2.0", id: 1, method: "m".repeat(65), params: { _meta: {} } }], "a message it checks"],
    ["a method name of 64 characters, with _meta", [{ jsonrpc: "2.0", id: 1, method: "m".repeat(64), params: { _meta: {} } }], "m".repeat(64)],
    ["a method of the SDK's names alone, with _meta", [{ jsonrpc: "2.0", id: 1, method: "x/y.z-w_1", params: { _meta: {} } }], "x/y.z-w_1"],
    ["an array", ["[1]\n"], "a message it checks"],
    ["a tools/list with a cursor that is not a string", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 5 } }], "tools/list"],
    ["a tools/list with another key", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { page: 2 } }], "tools/list"],
    ["a setLevel with another key", [{ jsonrpc: "2.0", id: 1, method: "logging/setLevel", params: { level: "debug", x: 1 } }], "logging/setLevel"],
    ["notifications/initialized with params", [{ jsonrpc: "2.0", method: "notifications/initialized", params: { x: 1 } }], "notifications/initialized"],
    ["a notification with a key JSON-RPC does not have", [{ jsonrpc: "2.0", method: "notifications/initialized", extra: 1 }], "notifications/initialized"],
    ["an answer from the client", [{ jsonrpc: "2.0", id: 77, result: {} }], "an answer from the client"],
    ["an error from the client", [{ jsonrpc: "2.0", id: 77, error: { code: 1, message: "x" } }], "an answer from the client"],
    ["prompts/list", [{ jsonrpc: "2.0", id: 1, method: "prompts/list" }], "prompts/list"],
  ];
  test.each(cases)("%s", async (_, messages, why) => {
    const r = await route(messages);
    expect(r.loaded).toBe(why);
  });

  test("a second initialize, once the SDK's server is there, is the SDK's; a notification then reaches it too", async () => {
    const r = await route([
      { jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } },
      { jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "again", version: "2" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
    ]);
    expect(r.loaded).toBe("ping");
    // The SDK's own answer to a second initialize (the front would have answered it as the first).
    expect(r.answer(2).error ?? r.answer(2).result).toBeDefined();
    expect(r.answer(3).result.tools).toHaveLength(3);
  });

  test("an initialize the front does not read plainly is the SDK's from the start, and answered as the front answers a plain one", async () => {
    const plain = await route([]);
    const odd = await route([{ jsonrpc: "2.0", id: 1, method: "tools/list" }], { initialize: { protocolVersion: "2025-06-18", capabilities: { tasks: {} }, clientInfo: INFO } });
    expect(plain.loaded).toBeNull();
    expect(odd.loaded).toBe("initialize");
    expect(odd.answer(0)).toEqual(plain.answer(0));
    // The SDK's server, told nothing by the front, knows the client from its own initialize.
    expect(odd.stderr).toContain("tools/list from raw");
  });

  test("the SDK's server is told the client the front answered: the --verbose note names it after the SDK loaded", async () => {
    const r = await route([
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1, method: "ping", params: { x: 1 } },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
    ]);
    expect(r.loaded).toBe("ping");
    expect(r.stderr).toContain("tools/list from raw: 3 tools");
    // The replayed initialize's answer goes nowhere: one answer to id 0, the front's.
    expect(r.messages.filter((m) => m.id === 0)).toHaveLength(1);
    expect(r.lines.filter((l) => l.includes("replayed"))).toEqual([]);
  });
});
