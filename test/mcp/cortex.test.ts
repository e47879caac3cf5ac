/**
 * `cxagent mcp` serving a Cortex native plugin to the MCP SDK's Client over stdio: its tools as
 * its descriptors declare them, results, a bad reply and a crash as isError results while the
 * server goes on, its default deadline, and a gated tool denied by policy without elicitation.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR, fixture } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

const BASIC = fixture("cortex-basic");
let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-cortex-"));
  state = await approvedState(home, [BASIC, CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const text = (result: any) => result.content[0].text as string;

describe("a Cortex plugin under cxagent mcp", () => {
  test("its tools are listed as its descriptors declare them, gated by their effects", async () => {
    await using server = await connect([BASIC, CALCULATOR, "--verbose"], { state });
    const { tools } = await server.client.listTools();
    const echo = tools.find((t) => t.name === "echo")!;
    expect(echo).toMatchObject({ description: "Returns its input JSON as its output.", inputSchema: { type: "object" }, _meta: { "cxagent/plugin": "cortex-basic", "cxagent/gated": false } });
    expect(tools.find((t) => t.name === "write_note")!._meta).toEqual({ "cxagent/plugin": "cortex-basic", "cxagent/gated": true });
    expect(tools.map((t) => t.name)).toContain("calc_add");
    expect(server.stderr()).toContain("cortex-basic");
  });

  test("calls: a result, an error result, a bad reply and a crash, and the server goes on", async () => {
    await using server = await connect([BASIC, CALCULATOR], { state });
    const echoed = await server.client.callTool({ name: "echo", arguments: { via: "mcp" } });
    expect(echoed.isError).toBe(false);
    expect(text(echoed)).toBe('{"via":"mcp"}');
    expect(echoed.structuredContent).toBeUndefined();

    const failed = await server.client.callTool({ name: "fail", arguments: {} });
    expect(failed).toMatchObject({ isError: true });
    expect(text(failed)).toBe("it failed on purpose");

    const bad = await server.client.callTool({ name: "malformed", arguments: { how: "not_object" } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toContain("tool_execute returned an array where a ToolResult object belongs");

    const late = await server.client.callTool({ name: "slow", arguments: { ms: 5000 } });
    expect(late.isError).toBe(true);
    expect(text(late)).toContain("timeout_secs 1");

    const denied = await server.client.callTool({ name: "write_note", arguments: {} });
    expect(denied).toMatchObject({ isError: true, _meta: { "cxagent/decidedBy": "policy", "cxagent/permissionDenied": true } });

    expect(JSON.parse(text(await server.client.callTool({ name: "invocation", arguments: {} })))).toMatchObject({ tool_name: "invocation", actor: null, source: "mcp", execution_scope: "foreground" });
    expect(text(await server.client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } }))).toBe("6 * 7 = 42");
    expect(text(await server.client.callTool({ name: "echo", arguments: { still: "here" } }))).toBe('{"still":"here"}');
  }, 30_000);

  test("a crash in tool_execute is an isError result; the next call starts a fresh plugin host", async () => {
    await using server = await connect([BASIC], { state, env: { CXAGENT_FX_FAULT: "execute:abort", CXAGENT_FX_FAULT_ONCE: join(home, "abort-once") } });
    const crashed = await server.client.callTool({ name: "work", arguments: {} });
    expect(crashed.isError).toBe(true);
    expect(text(crashed)).toContain("crashed (signal SIGABRT) while tool_execute of work was running");
    expect(text(await server.client.callTool({ name: "work", arguments: {} }))).toBe("fine");
  }, 30_000);
});
