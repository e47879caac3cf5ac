/**
 * Tool selection through the library, with real config files and a real plugin that records every
 * request it receives: hidden tools are neither listed nor called, a forced ask asks every call,
 * limits from config bound calls, and the API's own options only narrow.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session, type SessionOptions } from "../../src/session/session.ts";
import type { PermissionRequest } from "../../src/host/gate.ts";
import { approve, fixture, refusal, tempDir } from "../helpers.ts";


/** A config folder, a state folder with the fixtures approved, and a project folder. */
async function world(dir: string, user: Record<string, object>, project?: object) {
  const configDir = join(dir, "config");
  const stateDir = join(dir, "state");
  const cwd = join(dir, "project");
  mkdirSync(configDir);
  mkdirSync(join(cwd, ".cxagent"), { recursive: true });
  const plugins = Object.fromEntries(Object.entries(user).map(([name, entry]) => [name, { file: `${name}.so`, path: fixture(name), ...entry }]));
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins }));
  if (project) writeFileSync(join(cwd, ".cxagent", "config.json"), JSON.stringify(project));
  for (const name of Object.keys(user)) await approve(fixture(name), stateDir);
  const marker = join(dir, "calls.log");
  const open = (options: SessionOptions = {}) => Session.open({ configDir, stateDir, cwd, env: { CXAGENT_FX_MARKER: marker }, ...options });
  const calls = () => (existsSync(marker) ? readFileSync(marker, "utf8").trim().split("\n") : []);
  return { open, calls, configFile: join(configDir, "config.json"), projectFile: join(cwd, ".cxagent", "config.json") };
}

describe("hidden tools", () => {
  test("are not in plugin.tools; invoke and gate are refused with E_TOOL_HIDDEN before reaching the plugin", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "records-calls": { tools: { deny: ["files_d*"], allow: ["files_*"] } } });
    await using session = await w.open();
    const plugin = await session.load("records-calls");
    expect(plugin.tools.map((t) => t.name)).toEqual(["files_read", "files_write"]);
    expect(plugin.manifest.tools.map((t) => t.name)).toEqual(["files_read", "files_write", "files_delete", "net_fetch"]);

    const denied = await refusal(plugin.invoke("files_delete", {}, { permission: "once" }));
    expect(denied.code).toBe("E_TOOL_HIDDEN");
    expect(denied.exitCode).toBe(3);
    expect(denied.message).toBe(`tool 'files_delete' of plugin 'records-calls' is hidden by ${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_d*"), so it is neither listed nor called`);
    expect(denied.details).toEqual({ plugin: "records-calls", tool: "files_delete", source: w.configFile, rule: 'plugins["records-calls"].tools.deny[0]', pattern: "files_d*", kind: "deny" });
    const gate = await refusal(plugin.gate("files_delete"));
    expect(gate.code).toBe("E_TOOL_HIDDEN");
    const notAllowed = await refusal(plugin.invoke("net_fetch"));
    expect(notAllowed.message).toContain(`hidden by ${w.configFile}: plugins["records-calls"].tools.allow, none of whose patterns matches it`);

    // The plugin saw none of those, and does see a visible tool's call.
    expect(w.calls()).toEqual([]);
    expect((await plugin.invoke("files_read")).output.content).toBe("files_read ran");
    expect(w.calls()).toEqual(["invoke files_read"]);
  });

  test("a plugin whose tools are all hidden adds no instructions", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "records-calls": {}, echo: {} }, { plugins: { "records-calls": { tools: { deny: ["*"] } } } });
    await using session = await w.open();
    await session.load("records-calls");
    await session.load("echo");
    expect(session.instructions()).toBe("## echo_this, echo_that\n\nEcho tools for tests.\n");
  });

  test("Session.open({ tools }) and load(ref, { tools }) narrow further and never widen", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "records-calls": { tools: { deny: ["net_*"] } } });
    await using session = await w.open({ tools: { allow: ["files_*", "net_fetch"] } });
    const plugin = await session.load("records-calls", { tools: { deny: ["files_write"] } });
    expect(plugin.tools.map((t) => t.name)).toEqual(["files_read", "files_delete"]);
    expect(plugin.policy.hidden.get("net_fetch")!.source).toBe(w.configFile); // config.json's deny still holds
    expect(plugin.policy.hidden.get("files_write")).toEqual({ source: "load(ref, { tools })", rule: "tools.deny[0]", pattern: "files_write", kind: "deny" });
    const bad = await refusal(session.load("echo", { tools: { deny: ["echo.*"] } }));
    expect(bad.code).toBe("E_INVALID_INPUT");
    expect(bad.message).toContain('tools.deny[0]: "echo.*" is not a tool-name pattern');
  });
});

describe("a tool made to ask on every call", () => {
  test("asks although its manifest never does, offers no Always, and no stored grant answers it", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "records-calls": {} }, { plugins: { "records-calls": { tools: { ask: ["files_read", "files_write"] } } } });
    await using session = await w.open();
    const plugin = await session.load("records-calls");
    const asked: PermissionRequest[] = [];
    const result = await plugin.invoke("files_read", { path: "a" }, { permission: (r) => (asked.push(r), "always") });
    expect(result.success).toBe(true);
    expect(asked[0]!.decision).toEqual({
      ask: true,
      display: 'records-calls wants to run files_read with {"path":"a"}',
      alwaysOffered: false,
      rule: "plugin records-calls tool files_read",
      source: "manifest",
      granted: false,
      forcedBy: { source: w.projectFile, rule: 'plugins["records-calls"].tools.ask[0]', pattern: "files_read", kind: "ask" },
    });
    // "always" was taken as once: no grant, so the next call asks again; without anyone to ask it is denied.
    const denied = await plugin.invoke("files_read", { path: "a" });
    expect(denied).toMatchObject({ success: false, permissionDenied: true, decidedBy: "policy" });
    expect(w.calls()).toEqual(["invoke files_read"]);
  });

  test("a stored grant for a gated tool no longer answers once the project makes it ask", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "records-calls": {} });
    {
      await using session = await w.open();
      await (await session.load("records-calls")).invoke("files_write", {}, { permission: "always" });
    }
    {
      await using session = await w.open();
      expect((await (await session.load("records-calls")).gate("files_write")).granted).toBe(true);
    }
    writeFileSync(w.projectFile, JSON.stringify({ plugins: { "records-calls": { tools: { ask: ["files_w*"] } } } }));
    await using session = await w.open();
    const d = await (await session.load("records-calls")).gate("files_write");
    expect(d).toMatchObject({ ask: true, granted: false, alwaysOffered: false, forcedBy: { source: w.projectFile, pattern: "files_w*" } });
  });
});

describe("limits from config files", () => {
  test("a project's lower invokeTimeoutMs abandons a call that runs longer, naming the rule", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { "slow-invoke": { invokeTimeoutMs: 60_000 } }, { plugins: { "slow-invoke": { invokeTimeoutMs: 200 } } });
    await using session = await w.open();
    const plugin = await session.load("slow-invoke");
    const error = await refusal(plugin.invoke("slow_invoke", { ms: 60_000 }, { timeoutMs: 30_000 }));
    expect(error.code).toBe("E_TIMEOUT");
    expect(error.message).toBe(`plugin 'slow-invoke': cxagent_plugin_invoke of slow_invoke did not answer within 200 ms (calls of plugin 'slow-invoke' may take at most 200 ms, the limit ${w.projectFile}: plugins["slow-invoke"].invokeTimeoutMs sets)`);
    // A caller's own shorter deadline is its own.
    const own = await refusal(plugin.invoke("slow_invoke", { ms: 60_000 }, { timeoutMs: 100 }));
    expect(own.message).toBe("plugin 'slow-invoke': cxagent_plugin_invoke of slow_invoke did not answer within 100 ms");
  });

  test("a project's lower gateTimeoutMs makes a slow gate count as failed sooner, naming the rule", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { gates: {} }, { plugins: { gates: { gateTimeoutMs: 50 } } });
    await using session = await w.open({ gateMs: 30_000 });
    const d = await (await session.load("gates")).gate("sleeps", { ms: 20_000 });
    expect(d.source).toBe("gate-failed");
    expect(d.display).toContain(`it took longer than 50 ms, the limit ${w.projectFile}: plugins.gates.gateTimeoutMs sets`);
  });
});

describe("disabled by the project", () => {
  test("is refused even with once, naming the file", async () => {
    using dir = tempDir();
    const w = await world(dir.path, { echo: {} }, { plugins: { echo: { enabled: false } } });
    await using session = await w.open();
    expect(session.available().find((p) => p.name === "echo")!.enabled).toBe(false);
    const error = await refusal(session.load("echo", { once: true }));
    expect(error.code).toBe("E_DISABLED");
    expect(error.message).toBe(`plugin 'echo' is disabled by this project's configuration (${w.projectFile}: plugins.echo.enabled is false), so it was not loaded`);
  });
});
