/**
 * The stdio front (src/mcp/stdio-front.ts, issue 42 point 2): `initialize`, `ping`, `tools/list`,
 * `logging/setLevel` and `tools/call` are served without loading the MCP SDK's server; the first
 * message it leaves to the SDK loads it, once, and the SDK's server then knows the client the front
 * answered (an elicitation asked after that reaches the client).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR } from "../helpers.ts";
import { approvedState, raw } from "./_mcp.ts";

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-front-"));
  state = await approvedState(home, [CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const LOADED = "loading the MCP SDK's server for";

test("the common requests are served without the SDK's server; the first other message loads it once, and answers as before", async () => {
  const server = raw([CALCULATOR, "--verbose"], { state });
  const init = await server.initialize("2025-06-18", { elicitation: {} });
  expect(init.result).toMatchObject({ protocolVersion: "2025-06-18", capabilities: { tools: { listChanged: true }, logging: {} }, serverInfo: { name: "cxagent" } });
  server.send({ jsonrpc: "2.0", id: 1, method: "ping" });
  server.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  server.send({ jsonrpc: "2.0", id: 3, method: "logging/setLevel", params: { level: "warning" } });
  server.send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "calc_multiply", arguments: { a: 6, b: 7 } } });
  server.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 99 } });
  expect((await server.response(1)).result).toEqual({});
  expect((await server.response(2)).result.tools.map((t: { name: string }) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
  expect((await server.response(3)).result).toEqual({});
  expect((await server.response(4)).result.content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
  expect(server.stderr()).not.toContain(LOADED);

  // A method no handler serves is answered as the SDK's server would, without it.
  server.send({ jsonrpc: "2.0", id: 5, method: "resources/list" });
  expect((await server.response(5)).error).toEqual({ code: -32601, message: "Method not found" });
  expect(server.stderr()).not.toContain(LOADED);

  // Left to the SDK: a malformed setLevel (its schema's answer), then one with _meta.
  server.send({ jsonrpc: "2.0", id: 6, method: "logging/setLevel", params: { level: "loud" } });
  server.send({ jsonrpc: "2.0", id: 7, method: "tools/list" });
  server.send({ jsonrpc: "2.0", id: 9, method: "resources/list", params: { _meta: {} } });
  expect((await server.response(6)).error.code).toBe(-32603);
  expect((await server.response(7)).result.tools).toHaveLength(3);
  expect((await server.response(9)).error).toEqual({ code: -32601, message: "Method not found" });
  expect(server.stderr().split(LOADED).length - 1).toBe(1);
  expect(server.stderr()).toContain(`${LOADED} logging/setLevel`);
  // Answered in the order asked, while the SDK's server loaded.
  const ids = server.messages().map((m) => m.id);
  expect(ids.indexOf(6)).toBeLessThan(ids.indexOf(7));

  // The SDK's server was told the client's initialize: calc_divide's gate asks through it.
  server.send({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "calc_divide", arguments: { a: 1, b: 0 } } });
  const { until } = await import("../helpers.ts");
  await until(() => server.messages().some((m) => m.method === "elicitation/create"), 15_000, "an elicitation");
  const ask = server.messages().find((m) => m.method === "elicitation/create");
  server.send({ jsonrpc: "2.0", id: ask.id, result: { action: "decline" } });
  const divided = await server.response(8);
  expect(divided.result.isError).toBe(true);
  expect(divided.result._meta["cxagent/decidedBy"]).toBe("user");
  expect(await server.end()).toBe(0);
});
