/**
 * `cxagent mcp` serves what the library lets a model see: hidden tools are not in tools/list and a
 * call to one is refused by the library (E_TOOL_HIDDEN) without reaching the plugin; a tool the
 * project makes ask on every call is asked through elicitation, saying why.
 */
import { describe, expect, test } from "bun:test";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fixture, tempDir } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

const RECORDS = fixture("records-calls");

async function world(dir: string) {
  const configDir = join(dir, "config");
  const project = join(dir, "project");
  mkdirSync(configDir);
  mkdirSync(join(project, ".cxagent"), { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "records-calls": { file: "records-calls.so", path: RECORDS, tools: { deny: ["files_d*"] } } } }));
  const projectFile = join(project, ".cxagent", "config.json");
  writeFileSync(projectFile, JSON.stringify({ plugins: { "records-calls": { tools: { deny: ["net_*"], ask: ["files_read"] } } } }));
  const state = await approvedState(dir, [RECORDS]);
  const marker = join(dir, "calls.log");
  return {
    projectFile,
    configFile: join(configDir, "config.json"),
    calls: () => (existsSync(marker) ? readFileSync(marker, "utf8").trim().split("\n") : []),
    connect: (capabilities = {}) => connect(["records-calls", "--verbose"], { state, cwd: project, configDir, capabilities, env: { CXAGENT_FX_MARKER: marker } }),
  };
}

describe("cxagent mcp and tool selection", () => {
  test("tools/list and the instructions leave hidden tools out; a call to one is refused and never reaches the plugin", async () => {
    using dir = tempDir();
    const w = await world(dir.path);
    await using server = await w.connect();
    const { tools } = await server.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["files_read", "files_write"]);
    expect(server.client.getInstructions()).toStartWith("## files_read, files_write\n\n");
    for (const [name, file, pattern] of [["files_delete", w.configFile, "files_d*"], ["net_fetch", w.projectFile, "net_*"]] as const) {
      const result = await server.client.callTool({ name, arguments: {} });
      expect(result).toMatchObject({ isError: true, _meta: { "cxagent/plugin": "records-calls", "cxagent/error": "E_TOOL_HIDDEN" } });
      expect((result.content as { text: string }[])[0]!.text).toStartWith(`tool '${name}' of plugin 'records-calls' is hidden by ${file}: plugins["records-calls"].tools.deny[0] (${JSON.stringify(pattern)})`);
    }
    expect(w.calls()).toEqual([]);
    expect(server.stderr()).toContain("E_TOOL_HIDDEN");
  });

  test("a tool the project makes ask is asked through elicitation, saying why, with no Allow always", async () => {
    using dir = tempDir();
    const w = await world(dir.path);
    await using server = await w.connect({ elicitation: {} });
    const asked: any[] = [];
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return { action: "accept", content: { decision: "allow_once" } };
    });
    const result = await server.client.callTool({ name: "files_read", arguments: { path: "a" } });
    expect(result.isError).toBe(false);
    expect(asked).toHaveLength(1);
    expect(asked[0].message).toBe(
      `cxagent: plugin 'records-calls' wants to run its tool 'files_read'.\nrecords-calls wants to run files_read with {"path":"a"}\nThis tool asks on every call because of ${w.projectFile}: plugins["records-calls"].tools.ask[0] ("files_read").\nAllow always is not offered for this call.`,
    );
    expect(asked[0].requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    expect(w.calls()).toEqual(["invoke files_read"]);
  });
});
