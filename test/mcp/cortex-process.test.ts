/**
 * `cxagent mcp` serving a Cortex process plugin (examples/cortex-process, and the project's
 * fixture) to the MCP SDK's Client over stdio: its tools from its manifest.toml, a call run as a
 * process, and a malformed answer as an isError result while the server goes on.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

const EXAMPLE = join(ROOT, "examples/cortex-process");
const FIXTURE = join(ROOT, "test/fixtures/cortex-process");
let home = "";
let state = "";
let confined = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-process-"));
  // The fixture with [cxagent.sandbox] (issue 43): each call's process through the launcher.
  confined = join(home, "confined");
  cpSync(FIXTURE, confined, { recursive: true });
  appendFileSync(join(confined, "manifest.toml"), '\n[cxagent.sandbox]\nnet = "none"\n');
  state = await approvedState(home, [EXAMPLE, FIXTURE, confined]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const text = (result: any) => result.content[0].text as string;

test("a Cortex process plugin's tools are served, each call a process; a malformed answer is an error result and the server goes on", async () => {
  await using server = await connect([EXAMPLE, FIXTURE], { state });
  const { tools } = await server.client.listTools();
  expect(tools.find((t) => t.name === "shell_word_count")).toMatchObject({ inputSchema: { required: ["text"] }, _meta: { "cxagent/plugin": "shell-tools", "cxagent/gated": false } });
  const counted = await server.client.callTool({ name: "shell_word_count", arguments: { text: "one two three" } });
  expect(counted.isError).toBe(false);
  expect(text(counted)).toBe("3 words, 1 lines, 13 characters");
  const bad = await server.client.callTool({ name: "act", arguments: { fault: "not_json" } });
  expect(bad.isError).toBe(true);
  expect(text(bad)).toContain("wrote on stdout what is not JSON");
  const denied = await server.client.callTool({ name: "careful", arguments: {} });
  expect(denied).toMatchObject({ isError: true, _meta: { "cxagent/permissionDenied": true } });
  expect(text(await server.client.callTool({ name: "act", arguments: { fault: "ok" } }))).toBe('{"tool":"act","input":{"fault":"ok"}}');
}, 30_000);

test("a result's media: a readable image inline as image content, a remote video as a resource link", async () => {
  await using server = await connect([FIXTURE], { state });
  const png = join(home, "dot.png");
  writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const result = await server.client.callTool({ name: "act", arguments: { fault: "media", at: png } });
  expect(result.isError).toBe(false);
  expect(result.content).toEqual([
    { type: "text", text: "a picture" },
    { type: "image", data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString("base64"), mimeType: "image/png" },
    { type: "resource_link", uri: "https://example.org/clip.mp4", name: "https://example.org/clip.mp4", mimeType: "video/mp4" },
  ]);
}, 30_000);

test("a sandboxed Cortex process plugin over MCP: each call's process runs under the launcher, and its _meta names the layers", async () => {
  await using server = await connect([confined], { state });
  const result = await server.client.callTool({ name: "act", arguments: { fault: "env" } });
  expect(result.isError).toBe(false);
  expect(result._meta).toMatchObject({ "cxagent/sandbox": expect.stringContaining("landlock") });
  // the launcher's marks on the command's environment: its layers, and a ${tmp} of the call's own
  expect(text(result)).toMatch(/CXAGENT_SANDBOX=no_new_privs\+\S*landlock\S*seccomp/);
  expect(text(result)).toMatch(/TMPDIR=\S+\/sandbox-\d+ /);
  const plain = await connect([FIXTURE], { state });
  try {
    expect(text(await plain.client.callTool({ name: "act", arguments: { fault: "env" } }))).not.toContain("CXAGENT_SANDBOX=");
  } finally {
    await plain[Symbol.asyncDispose]();
  }
}, 30_000);
