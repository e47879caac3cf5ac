/**
 * A malformed `tools/call` (issue 42 point 5) is JSON-RPC -32602 with a sentence saying what is
 * wrong, not -32603 with a schema library's dump; the session goes on.
 */
import { expect, test } from "bun:test";
import { CALCULATOR, tempDir } from "../helpers.ts";
import { callParamsProblem } from "../../src/mcp/call-params.ts";
import { approvedState, raw } from "./_mcp.ts";

test("no name, a name that is no string, or arguments that are no object: -32602 and a sentence", async () => {
  using dir = tempDir();
  const state = await approvedState(dir.path, [CALCULATOR]);
  const server = raw([CALCULATOR], { state });
  await server.initialize();
  const cases = [
    [{ arguments: {} }, 'tools/call takes params {"name": "<a tool tools/list lists>", "arguments": {…}}; params has no "name"'],
    [{ name: 7 }, 'tools/call takes params {"name": "<a tool tools/list lists>", "arguments": {…}}; its "name" is a number, not a string'],
    [{ name: "calc_add", arguments: '{"a":1}' }, `tool 'calc_add': "arguments" must be an object of the tool's arguments (tools/call takes params {"name": "<a tool tools/list lists>", "arguments": {…}}), not a string`],
  ] as const;
  for (const [i, [params, message]] of cases.entries()) {
    server.send({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params });
    expect((await server.response(i + 1)).error).toEqual({ code: -32602, message });
  }
  server.send({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "calc_multiply", arguments: { a: 6, b: 7 } } });
  expect((await server.response(9)).result.content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
  server.send({ jsonrpc: "2.0", id: 10, method: "no/such" });
  expect((await server.response(10)).error.code).toBe(-32601);
  expect(await server.end()).toBe(0);
}, 30_000);

test("callParamsProblem: what is well formed passes", () => {
  expect(callParamsProblem({ name: "x" })).toBeNull();
  expect(callParamsProblem({ name: "x", arguments: {} })).toBeNull();
  expect(callParamsProblem(undefined)).toContain("it got no params");
  expect(callParamsProblem({ name: "x", arguments: [1] })).toEndWith("not an array");
});
