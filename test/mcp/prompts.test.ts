/**
 * Plugin commands as MCP prompts (issue 42 point 4): prompts/list lists them with their
 * arguments, prompts/get runs one with the arguments' text and returns its message; a refusal or
 * an unknown prompt is -32602 with a sentence. A server whose plugins have no commands declares no
 * prompts capability.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { McpError } from "@modelcontextprotocol/sdk/types.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR, fixture } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-prompts-"));
  state = await approvedState(home, ["commands", CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("each command is a prompt; prompts/get runs it with the arguments' text and returns its message", async () => {
  await using server = await connect([fixture("commands"), CALCULATOR], { state, cwd: home });
  expect(server.client.getServerCapabilities()?.prompts).toBeDefined();
  const { prompts } = await server.client.listPrompts();
  expect(prompts.map((p) => p.name)).toEqual(["echo", "refuse", "change", "silent", "bad_status", "reports"]);
  expect(prompts[0]).toMatchObject({ name: "echo", title: "commands: /echo", description: "Says back what you typed", arguments: [{ name: "text", required: false }], _meta: { "cxagent/plugin": "commands" } });
  const got = await server.client.getPrompt({ name: "echo", arguments: { text: "hello there" } });
  expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "hello there" } }]);
  const fail = (p: Promise<unknown>) => p.then(() => null, (e: McpError) => ({ code: e.code, message: e.message }));
  expect(await fail(server.client.getPrompt({ name: "refuse" }))).toEqual({ code: -32602, message: "MCP error -32602: not today" });
  expect(await fail(server.client.getPrompt({ name: "nope" }))).toMatchObject({ code: -32602, message: expect.stringContaining("Unknown prompt 'nope'; the prompts served are: echo, refuse") });
  expect(await fail(server.client.getPrompt({ name: "echo", arguments: { other: "x" } }))).toMatchObject({ code: -32602, message: expect.stringContaining("prompt 'echo' takes the arguments text, not other") });
}, 30_000);

test("without commands, no prompts capability", async () => {
  await using server = await connect([CALCULATOR], { state, cwd: home });
  expect(server.client.getServerCapabilities()?.prompts).toBeUndefined();
}, 30_000);
