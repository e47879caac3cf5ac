/**
 * `cxagent mcp` is live (issue 42 point 3): a served plugin whose files change leaves the tool
 * list (notifications/tools/list_changed) while its new bytes are not approved, and comes back
 * once `cxagent approve` approves them, without a restart and without touching the other plugins;
 * a call running on the old host finishes there.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approve, until, writeModule } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

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

test("a changed plugin leaves the list, its running call finishes on the old host, and it comes back once approved", async () => {
  await using server = await connect([live, other], { state, cwd: home });
  let changes = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  const text = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await server.client.callTool({ name, arguments: args });
    return { error: result.isError, text: (result.content as { text: string }[])[0]!.text };
  };
  const names = async () => (await server.client.listTools()).tools.map((t) => t.name);
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
