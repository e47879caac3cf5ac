/**
 * Issue 42 point 4: a tool's title, annotations and outputSchema pass from its manifest to MCP;
 * structuredContent goes only with an outputSchema, and an output that breaks it is E_BAD_REPLY
 * naming the path; the trust prompt shows them as the plugin's claims; tools/list pages past 100.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSession, writeModule } from "../helpers.ts";
import { describeTrustRequest } from "../../src/cli/_trust-prompt.ts";
import { trustRequestOf } from "../../src/session/inspect.ts";
import { approvedState, connect } from "./_mcp.ts";

const TYPED = {
  name: "typed",
  title: "A typed answer",
  annotations: { readOnlyHint: true, openWorldHint: false },
  outputSchema: { type: "object", properties: { answer: { type: "number" } }, required: ["answer"] },
};
const CODE = `export default { start() {}, stop() {}, invoke(tool, args) {
  if (tool === "typed") return { success: true, output: args.bad ? { content: "bad", answer: "forty-two" } : { content: "42", answer: 42 } };
  return { success: true, output: { content: tool } };
} };`;

let home = "";
let state = "";
let claims = "";
let many = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-claims-"));
  claims = writeModule(home, "claims", CODE, { tools: [TYPED, { name: "plain" }] });
  many = writeModule(home, "many", CODE, { tools: Array.from({ length: 150 }, (_, i) => ({ name: `t${i}` })) });
  state = await approvedState(home, [claims, many]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("title, annotations and outputSchema are listed; structuredContent only with an outputSchema; a mismatch is E_BAD_REPLY with the path", async () => {
  await using server = await connect([claims], { state, cwd: home });
  const { tools } = await server.client.listTools();
  expect(tools.find((t) => t.name === "typed")).toMatchObject({ title: "A typed answer", annotations: TYPED.annotations, outputSchema: TYPED.outputSchema });
  const plain = tools.find((t) => t.name === "plain")!;
  expect(plain.title).toBe("claims: plain");
  expect(plain).not.toHaveProperty("annotations");
  expect(plain).not.toHaveProperty("outputSchema");
  expect(await server.client.callTool({ name: "typed", arguments: {} })).toMatchObject({ content: [{ type: "text", text: "42" }], structuredContent: { content: "42", answer: 42 }, isError: false });
  expect(await server.client.callTool({ name: "plain", arguments: {} })).not.toHaveProperty("structuredContent");
  const bad = await server.client.callTool({ name: "typed", arguments: { bad: true } });
  expect(bad).toMatchObject({ isError: true, _meta: { "cxagent/error": "E_BAD_REPLY" } });
  expect((bad.content as { text: string }[])[0]!.text).toContain("plugin 'claims': the output of typed does not match its outputSchema: answer: is a string, must be a number (type)");
});

test("the trust prompt shows the annotations and the outputSchema as the plugin's claims", async () => {
  await using session = await openSession({ stateDir: join(home, "fresh-state"), cwd: home });
  const text = describeTrustRequest(trustRequestOf(session.inspect(claims)));
  expect(text).toContain("  claims        typed: readOnly yes, openWorld no (the plugin's word, not enforced)");
  expect(text).toContain("  output        typed declare the shape of their output (checked on every result)");
});

test("tools/list pages past 100 tools; a cursor the server did not give is -32602", async () => {
  await using server = await connect([many], { state, cwd: home });
  const first = await server.client.listTools();
  expect(first.tools).toHaveLength(100);
  expect(first.nextCursor).toBe("100");
  const second = await server.client.listTools({ cursor: first.nextCursor });
  expect(second.tools.map((t) => t.name)).toEqual(Array.from({ length: 50 }, (_, i) => `t${100 + i}`));
  expect(second.nextCursor).toBeUndefined();
  const refused = await server.client.listTools({ cursor: "abc" }).then(() => null, (e: McpError) => e);
  expect(refused?.code).toBe(-32602);
  expect(refused?.message).toContain('the cursor "abc" is not one this server gave');
});
