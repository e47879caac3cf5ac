/**
 * `cxagent mcp` is live (issue 42 point 3): a served plugin whose files change leaves the tool
 * list (notifications/tools/list_changed) while its new bytes are not approved, and comes back
 * once `cxagent approve` approves them, without a restart and without touching the other plugins;
 * a call running on the old host finishes there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approve, cli, hostsOf, until, writeModule } from "../helpers.ts";
import { approvedState, connect, listening } from "./_mcp.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const code = (version: string) => `export default { start() {}, stop() {}, async invoke(tool, args) {
  if (args.ms) await new Promise((r) => setTimeout(r, args.ms));
  return { success: true, output: { content: "${version}" } };
} };`;

let home = "";
let state = "";
let live = "";
let other = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-live-"));
  live = writeModule(home, "live", code("v1"), { tools: [{ name: "live_work" }] });
  other = writeModule(home, "other", code("other"), { tools: [{ name: "other_work" }] });
  state = await approvedState(home, [live, other]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** A tool's answer as {error, text}, and the names of the tools listed. */
function speak(client: Client) {
  return {
    text: async (name: string, args: Record<string, unknown> = {}) => {
      const result = await client.callTool({ name, arguments: args });
      return { error: result.isError, text: (result.content as { text: string }[])[0]!.text };
    },
    names: async () => (await client.listTools()).tools.map((t) => t.name),
  };
}

test("a changed plugin leaves the list, its running call finishes on the old host, and it comes back once approved", async () => {
  await using server = await connect([live, other], { state, cwd: home });
  let changes = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  const { text, names } = speak(server.client);
  expect(await text("live_work")).toEqual({ error: false, text: "v1" });
  const running = text("live_work", { ms: 1500 });
  await Bun.sleep(200);
  writeFileSync(join(live, "live.ts"), code("v2"));
  await until(() => changes >= 1, 10_000, "notifications/tools/list_changed after the change");
  expect(await names()).toEqual(["other_work"]);
  const refused = await text("live_work");
  expect(refused.error).toBe(true);
  expect(refused.text).toContain("plugin 'live': its files changed since it was approved; approve them with: cxagent approve");
  expect(await text("other_work")).toEqual({ error: false, text: "other" });
  expect(await running).toEqual({ error: false, text: "v1" }); // on the old host
  await approve(live, state);
  await until(() => changes >= 2, 10_000, "notifications/tools/list_changed after the approval");
  expect(await names()).toEqual(["live_work", "other_work"]);
  expect(await text("live_work")).toEqual({ error: false, text: "v2" });
}, 60_000);

test("a revoked plugin leaves the list, its host ends once its running call has, and it comes back once approved again", async () => {
  const gone = writeModule(home, "gone", code("g1"), { tools: [{ name: "gone_work" }] });
  await approve(gone, state);
  // A client that can show a form is not asked to approve it again: the user just withdrew it.
  await using server = await connect([gone, other], { state, cwd: home, capabilities: { elicitation: { form: {} } } });
  let changes = 0;
  let asked = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  server.client.setRequestHandler(ElicitRequestSchema, async () => (asked++, { action: "decline" }));
  const { text, names } = speak(server.client);
  expect(await text("gone_work")).toEqual({ error: false, text: "g1" });
  const running = text("gone_work", { ms: 1500 });
  await Bun.sleep(200);
  const revoked = await cli(["revoke", gone], { env: { CXAGENT_STATE_DIR: state } });
  expect(revoked.code).toBe(0);
  await until(() => changes >= 1, 10_000, "notifications/tools/list_changed after the revoke");
  expect(await names()).toEqual(["other_work"]);
  const refused = await text("gone_work");
  expect(refused.error).toBe(true);
  expect(refused.text).toContain(`plugin 'gone': its approval was withdrawn; approve it again with: cxagent approve ${gone}`);
  expect(await running).toEqual({ error: false, text: "g1" }); // the call it had begun
  await until(() => hostsOf(join(gone, "gone.ts")).length === 0, 10_000, "the revoked plugin's host to end");
  expect(await text("other_work")).toEqual({ error: false, text: "other" });
  expect(asked).toBe(0);
  await approve(gone, state);
  await until(() => changes >= 2, 10_000, "notifications/tools/list_changed after approving it again");
  expect(await names()).toEqual(["gone_work", "other_work"]);
  expect(await text("gone_work")).toEqual({ error: false, text: "g1" });
}, 60_000);

describe("approval through the client (an elicitation form)", () => {
  const form = { elicitation: { form: {} } };

  test("yes approves exactly the changed files: the tools come back with the new code", async () => {
    const folder = writeModule(home, "asked", code("a1"), { tools: [{ name: "asked_work" }] });
    const approvalState = await approvedState(join(home, "asked-state"), [folder]);
    await using server = await connect([folder], { state: approvalState, cwd: home, capabilities: form });
    const questions: { message: string; requestedSchema: unknown }[] = [];
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(request.params as (typeof questions)[number]);
      return { action: "accept", content: { approve: true } };
    });
    let changes = 0;
    server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    writeFileSync(join(folder, "asked.ts"), code("a2"));
    await until(() => changes >= 2, 15_000, "the tools to leave the list and come back");
    expect(questions).toHaveLength(1);
    expect(questions[0]!.message).toContain("The files of plugin 'asked'");
    expect(questions[0]!.message).toContain("changed asked.ts");
    expect(questions[0]!.requestedSchema).toMatchObject({ properties: { approve: { type: "boolean", default: false } }, required: ["approve"] });
    const hash = /hash ([0-9a-f]{64})/.exec(questions[0]!.message)![1];
    expect(JSON.parse(readFileSync(join(approvalState, "approvals.json"), "utf8")).approvals.some((a: { hash: string }) => a.hash === hash)).toBe(true);
    const result = await server.client.callTool({ name: "asked_work", arguments: {} });
    expect((result.content as { text: string }[])[0]!.text).toBe("a2");
  }, 60_000);

  test("no, or a form declined, leaves the files unapproved and the tools off the list", async () => {
    const folder = writeModule(home, "refused", code("r1"), { tools: [{ name: "refused_work" }] });
    const approvalState = await approvedState(join(home, "refused-state"), [folder]);
    await using server = await connect([folder], { state: approvalState, cwd: home, capabilities: form });
    let asked = 0;
    server.client.setRequestHandler(ElicitRequestSchema, async () => {
      asked++;
      return { action: "accept", content: { approve: false } };
    });
    writeFileSync(join(folder, "refused.ts"), code("r2"));
    await until(() => asked === 1, 15_000, "the question");
    await until(() => server.stderr().includes("its new files were not approved by the client"), 10_000, "the note");
    expect((await server.client.listTools()).tools).toEqual([]);
  }, 60_000);

  test("a client without the token (--no-token over HTTP) is never asked: any local user could be behind it", async () => {
    const folder = writeModule(home, "open", code("o1"), { tools: [{ name: "open_work" }] });
    const approvalState = await approvedState(join(home, "open-state"), [folder]);
    await using server = await listening([folder, "--http", "127.0.0.1:0", "--no-token"], { state: approvalState, cwd: home });
    const client = new Client({ name: "open", version: "1" }, { capabilities: form });
    let asked = 0;
    client.setRequestHandler(ElicitRequestSchema, async () => {
      asked++;
      return { action: "accept", content: { approve: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["open_work"]);
    writeFileSync(join(folder, "open.ts"), code("o2"));
    await until(() => server.stderr().includes("plugin 'open' changed on disk"), 15_000, "the change to be seen");
    await Bun.sleep(1000);
    expect(asked).toBe(0);
    expect((await client.listTools()).tools).toEqual([]);
    await client.close();
  }, 60_000);

  test("the question names the files as text: an escape sequence in a file name is shown, not sent", async () => {
    const { approvalQuestion, plain } = await import("../../src/mcp/approval.ts");
    expect(plain("a\u001b]0;x\u0007b\u202ec\nd")).toBe("a\ufffd]0;x\ufffdb\ufffdc\ufffdd");
    const q = approvalQuestion({ plugin: "p", hash: "f".repeat(64), folder: "/x\u001b[2J", changes: { added: Array.from({ length: 12 }, (_, i) => `f${i}\u001b`), removed: [], modified: [] } });
    expect(q.message).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(q.message).toContain("and 2 more");
  });
});
