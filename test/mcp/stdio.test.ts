/**
 * `cxagent mcp` over stdio, driven by the MCP SDK's own Client (and by raw JSON-RPC lines where
 * the framing is the point): issue 16 points 2–10.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR, fixture, ROOT, until } from "../helpers.ts";
import { approvedState, childrenOf, connect, raw } from "./_mcp.ts";

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const CONFORMANCE = fixture("mcp-conformance");
const REPORTER = join(ROOT, "examples/reporter");
const sidecar = (name: string) => JSON.parse(readFileSync(join(fixture(name), `${name}.plugin.json`), "utf8"));

let home = "";
let state = "";
let project = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-"));
  state = await approvedState(home, ["mcp-conformance", "poller", "stdout-noise", "crash-in-invoke", "slow-invoke", "gates", "invoke-replies", REPORTER, CALCULATOR]);
  project = join(home, "project");
  mkdirSync(project);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const grants = () => {
  try {
    return JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")).grants;
  } catch {
    return [];
  }
};
const text = (result: any) => result.content[0].text as string;

describe("framing (point 2)", () => {
  test("stdout carries only JSON-RPC frames while a plugin printf()s; its output is on stderr under its name", async () => {
    const server = raw([fixture("stdout-noise"), "--verbose"], { state });
    await server.initialize();
    server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "stdout_noise", arguments: { x: 1 } } });
    expect((await server.response(1)).result.content).toEqual([{ type: "text", text: "quiet" }]);
    expect(await server.end()).toBe(0);
    expect(server.lines.length).toBeGreaterThanOrEqual(2);
    for (const line of server.lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: "2.0" });
    expect(server.stderr()).toContain("[stdout-noise] printf noise");
    expect(server.stderr()).toContain("[stdout-noise] puts noise");
    expect(server.stderr()).toContain("[stdout-noise] write(1) noise");
  });

  test("a line that is not JSON, or not JSON-RPC, is answered with an error and the session goes on", async () => {
    const server = raw([fixture("stdout-noise")], { state });
    await server.initialize();
    server.sendText("this is not json\n");
    server.sendText('{"hello": "world"}\n');
    server.send({ jsonrpc: "2.0", id: 2, method: "ping" });
    expect((await server.response(2)).result).toEqual({});
    expect(server.messages().filter((m) => m.id === null).map((m) => m.error.code)).toEqual([-32700, -32600]);
    expect(await server.end()).toBe(0);
  });
});

describe("initialize (point 3)", () => {
  test("capabilities, serverInfo and the composed instructions", async () => {
    await using server = await connect([CONFORMANCE], { state });
    expect(server.client.getServerCapabilities()).toEqual({ tools: { listChanged: true }, logging: {}, prompts: {} });
    expect(server.client.getServerVersion()).toEqual({ name: "cxagent", version: pkg.version });
    expect(server.client.getInstructions()).toBe(
      "## test_simple_text, test_error_handling, test_tool_with_logging, test_tool_with_progress, test_reconnection, test_elicitation, json_schema_2020_12_tool\n\n" +
        "The MCP conformance suite's fixture tools; each behaves as its scenario expects.\n",
    );
  });

  test("no instructions when no served plugin has any; an older protocol version is negotiated", async () => {
    const server = raw([fixture("stdout-noise")], { state });
    const reply = await server.initialize("2024-11-05");
    expect(reply.result.protocolVersion).toBe("2024-11-05");
    expect(reply.result).not.toHaveProperty("instructions");
    expect(await server.end()).toBe(0);
  });
});

describe("tools/list (point 4)", () => {
  test("one entry per tool: the manifest's inputSchema verbatim, plugin and gated in _meta, never a read-only claim", async () => {
    await using server = await connect([CONFORMANCE, fixture("crash-in-invoke")], { state });
    const { tools } = await server.client.listTools();
    const manifest = sidecar("mcp-conformance");
    expect(tools.map((t) => t.name)).toEqual([...manifest.tools.map((t: any) => t.name), "segfault", "abort", "exit", "fine"]);
    const schemaTool = tools.find((t) => t.name === "json_schema_2020_12_tool")!;
    expect(schemaTool.inputSchema).toEqual(manifest.tools.find((t: any) => t.name === "json_schema_2020_12_tool").inputSchema);
    expect(tools.find((t) => t.name === "test_elicitation")!._meta).toEqual({ "cxagent/plugin": "mcp-conformance", "cxagent/gated": true });
    expect(tools.find((t) => t.name === "test_simple_text")).toEqual({
      name: "test_simple_text",
      title: "mcp-conformance: test_simple_text",
      description: "Returns a simple text response",
      inputSchema: { type: "object" },
      _meta: { "cxagent/plugin": "mcp-conformance", "cxagent/gated": false },
    });
    // crash-in-invoke's tools have no description: a fallback names the plugin and the tool.
    expect(tools.find((t) => t.name === "fine")!.description).toBe("fine (from plugin crash-in-invoke 1.0.0)");
    for (const tool of tools) expect(tool).not.toHaveProperty("annotations");
  });
});

describe("tools/call (point 5)", () => {
  test("a result: text content (no structuredContent: the tool declares no outputSchema), isError = !success, _meta with exit code, duration, decidedBy", async () => {
    await using server = await connect([CALCULATOR, fixture("mcp-conformance")], { state, cwd: project });
    const result = await server.client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } });
    expect(result).toEqual({
      content: [{ type: "text", text: "6 * 7 = 42" }],
      isError: false,
      _meta: {
        "cxagent/plugin": "calculator",
        "cxagent/exitCode": 0,
        "cxagent/durationMs": expect.any(Number),
        "cxagent/decidedBy": null,
        "cxagent/permissionDenied": false,
        "cxagent/sandbox": expect.stringContaining("landlock+landlock-net+seccomp"),
      },
    });
    const failed = await server.client.callTool({ name: "test_error_handling", arguments: {} });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe("This tool intentionally returns an error for testing");
    expect(failed._meta?.["cxagent/exitCode"]).toBe(2);
  });

  test("an unknown tool is JSON-RPC error -32602", async () => {
    await using server = await connect([CALCULATOR], { state, cwd: project });
    const error = await server.client.callTool({ name: "no_such_tool", arguments: {} }).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toStartWith("MCP error -32602: Unknown tool 'no_such_tool'"); // the client's prefix, once
  });

  test("a crash, a bad reply and a timeout are tool errors that say what happened; the session and other tools go on", async () => {
    await using server = await connect([fixture("crash-in-invoke"), fixture("invoke-replies"), fixture("slow-invoke"), "--timeout", "300"], { state });
    const crashed = await server.client.callTool({ name: "segfault", arguments: {} });
    expect(crashed.isError).toBe(true);
    expect(crashed._meta?.["cxagent/error"]).toBe("E_CRASHED");
    expect(text(crashed)).toContain("SIGSEGV");
    const bad = await server.client.callTool({ name: "invalid_json", arguments: {} });
    expect(bad).toMatchObject({ isError: true, _meta: { "cxagent/error": "E_BAD_REPLY" } });
    expect(text(bad)).toContain("cxagent_plugin_invoke returned invalid JSON");
    const slow = await server.client.callTool({ name: "slow_invoke", arguments: { ms: 5000 } });
    expect(slow).toMatchObject({ isError: true, _meta: { "cxagent/error": "E_TIMEOUT" } });
    expect(text(slow)).toContain("did not answer within 300 ms");
    expect(text(await server.client.callTool({ name: "fine", arguments: {} }))).toBe("survived");
    expect(text(await server.client.callTool({ name: "good", arguments: {} }))).toBe("good");
    expect(text(await server.client.callTool({ name: "slow_invoke", arguments: { ms: 1 } }))).toBe("slept 1 ms");
  });
});

describe("progress (point 6)", () => {
  // On the wire, not through the SDK client: it runs notification handlers a microtask late but
  // responses at once, so a last notification read in the same chunk as the response is dropped.
  const progressOf = async (plugin: string, tool: string, args: object) => {
    const server = raw([plugin], { state });
    await server.initialize();
    server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: args, _meta: { progressToken: "p-1" } } });
    const response = await server.response(1);
    expect(await server.end()).toBe(0);
    const messages = server.messages();
    const responseAt = messages.indexOf(messages.find((m) => m.id === 1));
    const progress = messages.filter((m) => m.method === "notifications/progress");
    for (const p of progress) expect(messages.indexOf(p)).toBeLessThan(responseAt);
    for (const p of progress) expect(p.params.progressToken).toBe("p-1");
    return { response, progress: progress.map((p) => p.params) };
  };

  test("each report becomes a notification before the result, strictly increasing, out of 100", async () => {
    const { response, progress } = await progressOf(CONFORMANCE, "test_tool_with_progress", {});
    expect(response.result.content[0].text).toBe("Progress complete");
    expect(progress).toEqual([
      { progressToken: "p-1", progress: 0, total: 100, message: "at 0" },
      { progressToken: "p-1", progress: 50, total: 100, message: "at 50" },
      { progressToken: "p-1", progress: 100, total: 100, message: "at 100" },
    ]);
  });

  test("streamed text rides along as the message, and progress still strictly increases", async () => {
    const { progress } = await progressOf(REPORTER, "reporter_count", { to: 4, delayMs: 5 });
    expect(progress.map((p) => p.message)).toEqual(["1 ", "counted to 1 of 4", "2 ", "counted to 2 of 4", "3 ", "counted to 3 of 4", "4 ", "counted to 4 of 4"]);
    for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress);
    expect(progress.every((p) => p.total === 100 && p.progress <= 100)).toBe(true);
  });

  test("the SDK client's onprogress hears them", async () => {
    await using server = await connect([CONFORMANCE], { state });
    const seen: any[] = [];
    await server.client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, { onprogress: (p) => seen.push(p) });
    expect(seen.slice(0, 2)).toEqual([
      { progress: 0, total: 100, message: "at 0" },
      { progress: 50, total: 100, message: "at 50" },
    ]);
  });

  test("no progress token, no progress notifications", async () => {
    const server = raw([REPORTER], { state });
    await server.initialize();
    server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "reporter_count", arguments: { to: 3, delayMs: 1 } } });
    expect((await server.response(1)).result.content[0].text).toBe("Counted to 3.");
    expect(await server.end()).toBe(0);
    expect(server.messages().filter((m) => m.method === "notifications/progress")).toEqual([]);
  });
});

describe("logging (point 7)", () => {
  test("plugin logs at or above the level set become notifications/message, and always reach stderr", async () => {
    await using server = await connect([CONFORMANCE, "--verbose"], { state });
    const logs: any[] = [];
    server.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params);
    });
    await server.client.setLoggingLevel("info");
    await server.client.callTool({ name: "test_tool_with_logging", arguments: {} });
    expect(logs).toEqual([
      { level: "info", logger: "mcp-conformance", data: "Tool execution started" },
      { level: "info", logger: "mcp-conformance", data: "Tool processing data" },
      { level: "info", logger: "mcp-conformance", data: "Tool execution completed" },
    ]);
    await server.client.setLoggingLevel("warning");
    await server.client.callTool({ name: "test_tool_with_logging", arguments: {} });
    expect(logs.length).toBe(3);
    const attributed = () => server.stderr().split("\n").filter((l) => l.includes("[mcp-conformance]") && l.includes("Tool execution completed"));
    await until(() => attributed().length === 2, 5000, `both calls' logs on stderr:\n${server.stderr()}`);
  });
});

describe("cancellation (point 8)", () => {
  test("notifications/cancelled abandons the call: no response for its id, and later calls work", async () => {
    const server = raw([fixture("slow-invoke"), "--verbose"], { state });
    await server.initialize();
    server.send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 800 } } });
    server.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5, reason: "the user pressed stop" } });
    await until(() => server.stderr().includes("cancelled by the client"), 10_000, "the server to note the cancellation");
    server.send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 1 } } });
    expect((await server.response(6)).result.content[0].text).toBe("slept 1 ms");
    // By the time this longer call answers, the abandoned one has answered too, and was dropped.
    server.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 900 } } });
    expect((await server.response(7)).result.content[0].text).toBe("slept 900 ms");
    expect(await server.end()).toBe(0);
    expect(server.messages().filter((m) => m.id === 5)).toEqual([]);
  });

  test("the SDK client's AbortSignal cancels; the same plugin serves the next call", async () => {
    await using server = await connect([fixture("slow-invoke"), "--verbose"], { state });
    const controller = new AbortController();
    const call = server.client.callTool({ name: "slow_invoke", arguments: { ms: 3000 } }, undefined, { signal: controller.signal });
    controller.abort("stop");
    expect(await call.then(() => null, (e: unknown) => (e as McpError).code)).toBe(-32001);
    await until(() => server.stderr().includes("cancelled by the client"), 10_000, "the server to abandon the call");
    expect(text(await server.client.callTool({ name: "slow_invoke", arguments: { ms: 1 } }))).toBe("slept 1 ms");
  });
});

describe("permission (point 9)", () => {
  const elicitingClient = (answer: (request: any) => any, asked: any[]) => async (server: Awaited<ReturnType<typeof connect>>) => {
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer(request.params);
    });
  };

  test("with elicitation: the client is asked, naming plugin, tool and wording; allow once runs the call and stores nothing", async () => {
    await using server = await connect([CONFORMANCE], { state, cwd: project, capabilities: { elicitation: {} } });
    const asked: any[] = [];
    await elicitingClient(() => ({ action: "accept", content: { decision: "allow_once" } }), asked)(server);
    const result = await server.client.callTool({ name: "test_elicitation", arguments: { message: "hello" } });
    expect(text(result)).toBe("allowed; the message was: hello");
    expect(asked).toHaveLength(1);
    expect(asked[0].message).toBe(`cxagent: plugin 'mcp-conformance' wants to run its tool 'test_elicitation'.\nmcp-conformance wants to run test_elicitation with {"message":"hello"}`);
    expect(asked[0].requestedSchema.properties.decision.enum).toEqual(["allow_once", "allow_always", "deny"]);
    // a client that fills the form with its defaults, or a person who just presses Enter, denies
    expect(asked[0].requestedSchema.properties.decision.default).toBe("deny");
    expect(asked[0].requestedSchema.required).toEqual(["decision"]);
    expect(grants().filter((g: any) => g.scope === project)).toEqual([]);
  });

  test("allow always stores the grant exactly as the CLI does, and the next call is not asked", async () => {
    using dir = { path: mkdtempSync(join(tmpdir(), "cxagent-mcp-project-")), [Symbol.dispose]() { rmSync(this.path, { recursive: true, force: true }); } };
    await using server = await connect([CONFORMANCE], { state, cwd: dir.path, capabilities: { elicitation: {} } });
    const asked: any[] = [];
    await elicitingClient(() => ({ action: "accept", content: { decision: "allow_always" } }), asked)(server);
    expect((await server.client.callTool({ name: "test_elicitation", arguments: { message: "a" } })).isError).toBe(false);
    expect(grants().filter((g: any) => g.scope === dir.path)).toEqual([{ scope: dir.path, rule: "plugin mcp-conformance tool test_elicitation", folder: fixture("mcp-conformance"), grantedAt: expect.any(String) }]);
    expect((await server.client.callTool({ name: "test_elicitation", arguments: { message: "b" } })).isError).toBe(false);
    expect(asked).toHaveLength(1);
  });

  test("decline, cancel, or a failed elicitation deny the call (decided by the user); the plugin never runs it", async () => {
    const answers = [
      { action: "decline" },
      { action: "cancel" },
      { action: "accept", content: { decision: "deny" } },
      // only an accepted form's choice counts: a decline or cancel carrying one is still a no
      { action: "decline", content: { decision: "allow_once" } },
      { action: "cancel", content: { decision: "allow_always" } },
      // an accepted form without a choice, or with one it did not offer
      { action: "accept", content: {} },
      { action: "accept" },
      { action: "accept", content: { decision: "allow" } },
    ];
    for (const answer of answers) {
      await using server = await connect([CONFORMANCE], { state, cwd: project, capabilities: { elicitation: {} } });
      await elicitingClient(() => answer, [])(server);
      const result = await server.client.callTool({ name: "test_elicitation", arguments: { message: "x" } });
      expect(result).toMatchObject({ isError: true, _meta: { "cxagent/decidedBy": "user", "cxagent/permissionDenied": true } });
      expect(text(result)).toBe("test_elicitation was not run: permission was denied");
    }
    await using server = await connect([CONFORMANCE, "--verbose"], { state, cwd: project, capabilities: { elicitation: {} } });
    server.client.setRequestHandler(ElicitRequestSchema, async () => {
      throw new Error("the form could not be shown");
    });
    const result = await server.client.callTool({ name: "test_elicitation", arguments: { message: "x" } });
    expect(result._meta?.["cxagent/decidedBy"]).toBe("user");
    expect(server.stderr()).toContain("asking the client failed");
  }, 180_000); // nine servers, one after another: about 5 s alone

  test("a gate's own wording, no Always where the gate narrows it, and the generic wording when the gate failed", async () => {
    await using server = await connect([fixture("gates")], { state, cwd: project, capabilities: { elicitation: {} } });
    const asked: any[] = [];
    await elicitingClient(() => ({ action: "accept", content: { decision: "allow_always" } }), asked)(server);
    // allow_always where Always is not offered is no allow at all
    expect((await server.client.callTool({ name: "asks_narrow", arguments: {} }))._meta?.["cxagent/permissionDenied"]).toBe(true);
    await server.client.callTool({ name: "garbage", arguments: {} });
    expect(asked[0].message).toBe("cxagent: plugin 'gates' wants to run its tool 'asks_narrow'.\na sharp edge\nAllow always is not offered for this call.");
    expect(asked[0].requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    expect(asked[1].message).toContain("gates wants to run garbage — its permission check did not answer");
    expect(asked[1].requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    expect(grants().filter((g: any) => g.scope === project)).toEqual([]);
  });

  test("without elicitation: denied by policy, with the way out in the text", async () => {
    await using server = await connect([CONFORMANCE], { state, cwd: project });
    const result = await server.client.callTool({ name: "test_elicitation", arguments: { message: "x" } });
    expect(result).toMatchObject({ isError: true, _meta: { "cxagent/decidedBy": "policy", "cxagent/permissionDenied": true } });
    expect(text(result)).toContain("--allow-tool mcp-conformance/test_elicitation");
  });

  test("without elicitation, an --allow-tool rule or a stored grant allows the call", async () => {
    for (const rule of ["mcp-conformance/test_elicitation", "mcp-conformance/*", "plugin mcp-conformance tool test_elicitation"]) {
      await using server = await connect([CONFORMANCE, "--verbose", "--allow-tool", rule], { state, cwd: project });
      expect(text(await server.client.callTool({ name: "test_elicitation", arguments: { message: "ok" } }))).toBe("allowed; the message was: ok");
      expect(server.stderr()).toContain(`allowed by --allow-tool ${rule}`);
    }
    // a rule allows each call once: it never stores a grant
    expect(grants().filter((g: any) => g.scope === project)).toEqual([]);
    await using other = await connect([CONFORMANCE, "--allow-tool", "calculator/*"], { state, cwd: project });
    expect((await other.client.callTool({ name: "test_elicitation", arguments: { message: "no" } }))._meta?.["cxagent/decidedBy"]).toBe("policy");
    expect(other.stderr()).toContain("--allow-tool calculator/* matches no served tool");
    // The grant the previous test's "allow always" stored, in its own project: honoured without asking.
    using dir = { path: mkdtempSync(join(tmpdir(), "cxagent-mcp-project-")), [Symbol.dispose]() { rmSync(this.path, { recursive: true, force: true }); } };
    await using asked = await connect([CONFORMANCE], { state, cwd: dir.path, capabilities: { elicitation: {} } });
    await elicitingClient(() => ({ action: "accept", content: { decision: "allow_always" } }), [])(asked);
    await asked.client.callTool({ name: "test_elicitation", arguments: { message: "a" } });
    await using granted = await connect([CONFORMANCE], { state, cwd: dir.path });
    expect(text(await granted.client.callTool({ name: "test_elicitation", arguments: { message: "g" } }))).toBe("allowed; the message was: g");
  });

  test("a malformed --allow-tool rule is a usage error", async () => {
    const r = Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), "mcp", "--allow-tool", "a/b/c", "--state-dir", state], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("--allow-tool 'a/b/c' is not a rule");
    expect(r.stdout.toString()).toBe("");
  });
});

describe("list_changed (point 10)", () => {
  test("a restart and a quarantine notify the client; tools/list then leaves the quarantined plugin out", async () => {
    await using server = await connect([fixture("crash-in-invoke"), CALCULATOR], { state, cwd: project });
    let changes = 0;
    server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
    });
    expect((await server.client.callTool({ name: "segfault", arguments: {} })).isError).toBe(true);
    expect(text(await server.client.callTool({ name: "fine", arguments: {} }))).toBe("survived");
    await until(() => changes === 1, 5000, "list_changed after the restart");
    await server.client.callTool({ name: "abort", arguments: {} });
    await server.client.callTool({ name: "exit", arguments: {} });
    await until(() => changes >= 2, 5000, "list_changed after the quarantine");
    const { tools } = await server.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
    const refused = await server.client.callTool({ name: "fine", arguments: {} });
    expect(refused).toMatchObject({ isError: true, _meta: { "cxagent/error": "E_QUARANTINED" } });
    expect(text(await server.client.callTool({ name: "calc_multiply", arguments: { a: 2, b: 3 } }))).toBe("2 * 3 = 6");
  });
});

describe("what is served (point 1)", () => {
  test("a named plugin that cannot be found is an error before anything is served (exit 3, stdout empty)", async () => {
    const r = Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), "mcp", "no-such-plugin", "--state-dir", state], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    expect(r.exitCode).toBe(3);
    expect(r.stdout.toString()).toBe("");
    expect(r.stderr.toString()).toContain("no-such-plugin");
  });

  test("with no plugin named: every enabled and approved one; an unapproved one is skipped with one line naming the approve command", async () => {
    using dir = { path: mkdtempSync(join(tmpdir(), "cxagent-mcp-config-")), [Symbol.dispose]() { rmSync(this.path, { recursive: true, force: true }); } };
    const config = join(dir.path, "config");
    mkdirSync(join(config, "plugins"), { recursive: true });
    const { cpSync, writeFileSync } = await import("node:fs");
    for (const name of ["echo", "noop", "stdout-noise"]) cpSync(fixture(name), join(config, "plugins", name), { recursive: true });
    writeFileSync(join(config, "config.json"), JSON.stringify({ plugins: { noop: { file: "noop.so", enabled: false } } }));
    const ownState = await approvedState(dir.path, [join(config, "plugins", "echo"), join(config, "plugins", "noop")]);
    const server = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "mcp", "--config-dir", config, "--state-dir", ownState], {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    server.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }) + "\n");
    server.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) + "\n");
    server.stdin.end();
    const [stdout, stderr, code] = await Promise.all([new Response(server.stdout).text(), new Response(server.stderr).text(), server.exited]);
    expect(code).toBe(0);
    const listed = stdout.trim().split("\n").map((l) => JSON.parse(l)).find((m) => m.id === 1);
    expect(listed.result.tools.map((t: any) => t.name)).toEqual(["echo_this", "echo_that"]);
    const skipped = stderr.split("\n").filter((l) => l.includes("skipped plugin"));
    expect(skipped).toEqual([expect.stringContaining(`[mcp] `)]);
    expect(skipped[0]).toEndWith(`skipped plugin 'stdout-noise': it is not approved; approve it with: cxagent approve ${join(config, "plugins", "stdout-noise", "stdout-noise.so")}`);
  });
});

test("a client plugin is served lazily, and its submits are said on stderr and dropped: MCP cannot start work in the client", async () => {
  await using server = await connect([fixture("poller")], { state });
  expect(server.stderr()).toContain("plugin 'poller' can start work on its own (client: true)");
  expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("submit_once");
  expect(childrenOf(server.pid)).toEqual([]);
  await server.client.callTool({ name: "submit_once", arguments: {} });
  await until(() => server.stderr().includes("plugin 'poller' submitted work, dropped: run the tests"), 5000, "the submit to be noted");
});
