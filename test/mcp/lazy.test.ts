/**
 * `cxagent mcp` is lazy (issue 42 point 2): `initialize` and `tools/list` start no plugin host
 * for a plugin whose sidecar is its manifest; its first call starts one host, and a host idle
 * longer than the idle time is stopped and started again by its next call. A plugin configured
 * with keepAlive keeps its host.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approve, until, writeModule } from "../helpers.ts";
import { childrenOf, connect } from "./_mcp.ts";

const COUNT = 50;
let home = "";
let state = "";
let folders: string[] = [];
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-lazy-"));
  state = join(home, "state");
  mkdirSync(state);
  folders = Array.from({ length: COUNT }, (_, i) =>
    writeModule(home, `lazy${i}`, `export default { start() {}, stop() {}, invoke(tool, args) { return { success: true, output: { content: "${i}:" + JSON.stringify(args) } }; } };`, { tools: [{ name: `work_${i}` }] }),
  );
  for (const folder of folders) await approve(folder, state);
}, 120_000);
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("50 plugins: no plugin host after initialize and tools/list; one call, one host; idle, none; the next call starts it again", async () => {
  await using server = await connect([...folders, "--idle-ms", "1500"], { state, cwd: home });
  const { tools } = await server.client.listTools();
  expect(tools).toHaveLength(COUNT);
  expect(childrenOf(server.pid)).toEqual([]);
  const call = async () => (await server.client.callTool({ name: "work_7", arguments: { x: 1 } })).content;
  expect(await call()).toEqual([{ type: "text", text: '7:{"x":1}' }]);
  expect(childrenOf(server.pid)).toHaveLength(1);
  expect(await call()).toEqual([{ type: "text", text: '7:{"x":1}' }]);
  expect(childrenOf(server.pid)).toHaveLength(1);
  await until(() => childrenOf(server.pid).length === 0, 10_000, "the idle plugin host to be stopped");
  expect(await call()).toEqual([{ type: "text", text: '7:{"x":1}' }]);
  expect(childrenOf(server.pid)).toHaveLength(1);
  expect(server.stderr()).toBe("");
}, 60_000);

test("keepAlive in config.json keeps a plugin's host past the idle time", async () => {
  const configDir = join(home, "config-keep");
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { lazy3: { file: "lazy3.ts", path: folders[3], keepAlive: true } } }));
  await using server = await connect(["lazy3", folders[4]!, "--idle-ms", "300"], { state, cwd: home, configDir });
  await server.client.callTool({ name: "work_3", arguments: {} });
  await server.client.callTool({ name: "work_4", arguments: {} });
  expect(childrenOf(server.pid)).toHaveLength(2);
  await until(() => childrenOf(server.pid).length === 1, 10_000, "the idle host of lazy4 to be stopped");
  await Bun.sleep(1000);
  expect(childrenOf(server.pid)).toHaveLength(1);
}, 60_000);
