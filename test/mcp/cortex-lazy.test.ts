/**
 * A Cortex plugin under `cxagent mcp` is lazy once it has been started (issue 42 point 2): it
 * declares its tools only when it runs, so its first server loads it at once, and what it described
 * is kept by load-set hash, settings and cxagent version (session/described.ts); the next server
 * lists those tools with no plugin host, and the first call starts one. A missing or corrupt entry,
 * or other settings, means a load at once again; a plugin that now describes otherwise is listed as
 * it says now (list_changed).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describedKey } from "../../src/session/described.ts";
import { fixture, until } from "../helpers.ts";
import { approvedState, childrenOf, connect } from "./_mcp.ts";

const BASIC = fixture("cortex-basic");
let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-cortex-lazy-"));
  state = await approvedState(home, [BASIC]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const described = () => join(state, "described");
const entries = () => readdirSync(described()).filter((f) => f.endsWith(".json"));
/** The entry for the plugin's bytes without settings (the first test's). */
let plain = "";

test("first served at once and its describe kept; the next server lists it with no host, and a call starts one", async () => {
  let names: string[];
  {
    await using first = await connect([BASIC], { state, cwd: home });
    names = (await first.client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toContain("echo");
    expect(childrenOf(first.pid)).toHaveLength(1); // nothing kept yet: loaded at once
  }
  expect(entries()).toHaveLength(1);
  plain = join(described(), entries()[0]!);
  expect(statSync(plain).mode & 0o777).toBe(0o600);
  await using second = await connect([BASIC], { state, cwd: home });
  const tools = (await second.client.listTools()).tools;
  expect(tools.map((t) => t.name).sort()).toEqual(names);
  expect(tools.find((t) => t.name === "write_note")!._meta).toEqual({ "cxagent/plugin": "cortex-basic", "cxagent/gated": true });
  expect(childrenOf(second.pid)).toEqual([]);
  const echoed = await second.client.callTool({ name: "echo", arguments: { lazy: true } });
  expect((echoed.content as { text: string }[])[0]!.text).toBe('{"lazy":true}');
  expect(childrenOf(second.pid)).toHaveLength(1);
}, 60_000);

test("a corrupt entry is no entry: loaded at once, and the entry written again", async () => {
  const file = plain;
  writeFileSync(file, '{"not": "a manifest"}');
  {
    await using server = await connect([BASIC], { state, cwd: home });
    expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("echo");
    expect(childrenOf(server.pid)).toHaveLength(1);
  }
  expect(JSON.parse(readFileSync(file, "utf8")).name).toBe("cortex-basic");
}, 60_000);

test("listed from its entry, a tool the project's config denies is not listed", async () => {
  const project = join(home, "project-deny");
  mkdirSync(join(project, ".cxagent"), { recursive: true });
  writeFileSync(join(project, ".cxagent", "config.json"), JSON.stringify({ plugins: { "cortex-basic": { tools: { deny: ["fail"] } } } }));
  await using server = await connect([BASIC], { state, cwd: project });
  const names = (await server.client.listTools()).tools.map((t) => t.name);
  expect(childrenOf(server.pid)).toEqual([]);
  expect(names).toContain("echo");
  expect(names).not.toContain("fail");
}, 60_000);

test("other settings in config.json are another entry: loaded at once", async () => {
  const configDir = join(home, "config-settings");
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "cortex-basic": { file: "cortex-basic.so", path: BASIC, settings: { greeting: "hi" } } } }));
  const before = entries().length;
  {
    await using server = await connect(["cortex-basic"], { state, cwd: home, configDir });
    await server.client.listTools();
    expect(childrenOf(server.pid)).toHaveLength(1);
  }
  expect(entries()).toHaveLength(before + 1);
}, 60_000);

test("a plugin that now describes otherwise than its entry is listed as it says now, with list_changed", async () => {
  // An entry for these very bytes and settings, planted with a tool the plugin does not have.
  const file = plain;
  const kept = JSON.parse(readFileSync(file, "utf8"));
  writeFileSync(file, JSON.stringify({ ...kept, tools: [...kept.tools, { name: "ghost_tool", description: "not in the library" }] }));
  await using server = await connect([BASIC], { state, cwd: home });
  let changed = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("ghost_tool");
  expect(childrenOf(server.pid)).toEqual([]);
  await server.client.callTool({ name: "echo", arguments: {} });
  await until(() => changed > 0, 10_000, "list_changed");
  expect((await server.client.listTools()).tools.map((t) => t.name)).not.toContain("ghost_tool");
  expect(JSON.parse(readFileSync(file, "utf8")).tools.map((t: { name: string }) => t.name)).not.toContain("ghost_tool");
}, 60_000);

test("the key: the load set's hash, the settings and the version each make another", () => {
  const key = describedKey("a".repeat(64), {}, "1.0.0");
  expect(key).toMatch(/^[0-9a-f]{64}$/);
  expect(describedKey("a".repeat(64), undefined, "1.0.0")).toBe(key);
  expect(describedKey("b".repeat(64), {}, "1.0.0")).not.toBe(key);
  expect(describedKey("a".repeat(64), { x: 1 }, "1.0.0")).not.toBe(key);
  expect(describedKey("a".repeat(64), {}, "1.0.1")).not.toBe(key);
});
