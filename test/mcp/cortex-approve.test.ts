/**
 * Issue 42 point 2: a Cortex plugin's tools are "described once at approval". `cxagent approve`
 * starts a plugin whose kind has no sidecar once, after recording the approval, and keeps what it
 * describes; the first `cxagent mcp` then lists it with no plugin host. `--no-describe` runs
 * nothing, and a plugin that fails to describe stays approved, with a warning naming the failure.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { approve, cli, fixture, until } from "../helpers.ts";
import { childrenOf, connect } from "./_mcp.ts";

const BASIC = fixture("cortex-basic");
const HOSTILE = fixture("cortex-hostile");
let home = "";
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-cortex-approve-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

function freshState(name: string): string {
  const state = join(home, name);
  mkdirSync(state, { mode: 0o700 });
  return state;
}
const entries = (state: string) => (existsSync(join(state, "described")) ? readdirSync(join(state, "described")).filter((f) => f.endsWith(".json")) : []);
const hashOf = async (ref: string, state: string) => (await cli(["describe", ref, "--json", "--state-dir", state], { cwd: home })).json().hash as string;

test("approve describes a Cortex plugin once; the first server lists it with no plugin host", async () => {
  const state = freshState("described");
  const approved = await cli(["approve", BASIC, "--hash", await hashOf(BASIC, state), "--state-dir", state, "--json"], { cwd: home });
  expect(approved.code).toBe(0);
  expect(approved.json()).toMatchObject({ approved: true, already: false, described: { ok: true } });
  expect(approved.json().described.tools).toBeGreaterThan(0);
  expect(entries(state)).toHaveLength(1);
  await using server = await connect([BASIC], { state, cwd: home });
  expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("echo");
  expect(childrenOf(server.pid)).toEqual([]);
}, 60_000);

test("--no-describe runs nothing: no entry, and the first server loads it at once", async () => {
  const state = freshState("not-described");
  const approved = await cli(["approve", BASIC, "--hash", await hashOf(BASIC, state), "--state-dir", state, "--no-describe", "--json"], { cwd: home });
  expect(approved.code).toBe(0);
  expect(approved.json().described).toBeUndefined();
  expect(entries(state)).toEqual([]);
  await using server = await connect([BASIC], { state, cwd: home });
  expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("echo");
  expect(childrenOf(server.pid)).toHaveLength(1);
}, 60_000);

test("a plugin whose describe fails stays approved; the failure is a warning, and approving again describes nothing twice", async () => {
  const state = freshState("fails");
  const env = { CXAGENT_FX_CORTEX: "info:not_json" };
  const approved = await cli(["approve", HOSTILE, "--hash", await hashOf(HOSTILE, state), "--state-dir", state], { cwd: home, env });
  expect(approved.code).toBe(0);
  expect(approved.stdout).toContain("approved cortex-hostile");
  expect(approved.stdout).toMatch(/warning: approved, but describing it failed \(E_[A-Z_]+: .+\); it will be described at its first start/);
  expect(entries(state)).toEqual([]);
  const again = await cli(["approve", HOSTILE, "--hash", await hashOf(HOSTILE, state), "--state-dir", state, "--json"], { cwd: home });
  expect(again.json()).toMatchObject({ already: true, described: { ok: true } });
  expect(entries(state)).toHaveLength(1);
  const third = await cli(["approve", HOSTILE, "--hash", await hashOf(HOSTILE, state), "--state-dir", state, "--json"], { cwd: home });
  expect(third.json().described).toBeUndefined();
}, 60_000);

test("approving a plugin with a sidecar still runs none of its code", async () => {
  const state = freshState("sidecar");
  const marker = join(home, "ctor-ran");
  const plugin = fixture("ctor-marker");
  const approved = await cli(["approve", plugin, "--hash", await hashOf(plugin, state), "--state-dir", state, "--json"], { cwd: home, env: { CXAGENT_FX_MARKER: marker } });
  expect(approved.code).toBe(0);
  expect(approved.json().described).toBeUndefined();
  expect(existsSync(marker)).toBe(false);
}, 60_000);

test("served lazily, a Cortex plugin whose files change comes back once the new bytes are approved, described by a start of them", async () => {
  const state = freshState("live");
  const folder = join(home, "cortex-live");
  cpSync(BASIC, folder, { recursive: true });
  expect((await cli(["approve", folder, "--hash", await hashOf(folder, state), "--state-dir", state], { cwd: home })).code).toBe(0);
  await using server = await connect([folder, "--idle-ms", "1500"], { state, cwd: home });
  let changes = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  const names = async () => (await server.client.listTools()).tools.map((t) => t.name);
  expect(await names()).toContain("echo");
  expect(childrenOf(server.pid)).toEqual([]);
  writeFileSync(join(folder, "NOTES.txt"), "a change\n");
  await until(() => changes >= 1, 10_000, "list_changed after the change");
  expect(await names()).toEqual([]);
  await approve(folder, state); // the library's approval: runs nothing
  await until(() => changes >= 2, 20_000, "list_changed once the new bytes described their tools");
  expect(await names()).toContain("echo");
  await until(() => childrenOf(server.pid).length === 0, 10_000, "the host that described the new bytes to be stopped when idle");
  const echoed = await server.client.callTool({ name: "echo", arguments: { after: "change" } });
  expect((echoed.content as { text: string }[])[0]!.text).toBe('{"after":"change"}');
  expect(childrenOf(server.pid)).toHaveLength(1);
}, 60_000);
