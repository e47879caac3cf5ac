/**
 * Issue 42 point 2: a Cortex plugin's tools are "described once at approval". `cxagent approve`
 * starts a plugin whose kind has no sidecar once, after recording the approval, and keeps what it
 * describes; the first `cxagent mcp` then lists it with no plugin host. `--no-describe` runs
 * nothing, and a plugin that fails to describe stays approved, with a warning naming the failure.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, fixture } from "../helpers.ts";
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
