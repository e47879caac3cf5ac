/**
 * What a bare `cxagent mcp` serves is what `cxagent list` shows (issue 42 point 7): plugins found
 * by name and plugins approved by their path alike; a plugin approved by its path is served by its
 * name too. With nothing to serve it still serves (a plugin may be approved later), and says on
 * stderr where it looked and what to run, so an empty tools/list is never a mystery. Stderr
 * carries warnings and errors only, unless --verbose.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { CALCULATOR, cli, tempDir } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

test("serving no plugin names the folders and approvals it searched, and what to run", async () => {
  using dir = tempDir();
  const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state") };
  // stdin ends at once: the server starts, says what it serves, and stops
  const r = await cli(["mcp", "--cwd", dir.path], { env, stdin: "" });
  expect(r.code).toBe(0);
  expect(r.stderr).toContain(
    `no plugin to serve; looked in ${join(dir.path, ".cxagent/plugins")}, ${join(dir.path, "config/plugins")}, config.json and the approvals of ${join(dir.path, "state")}. Approve one with 'cxagent approve <plugin folder>'`,
  );
  // an ordinary start is not said without --verbose (clients log stderr as errors)
  expect(r.stderr).not.toContain("serving over stdio");
  const verbose = await cli(["mcp", "--cwd", dir.path, "--verbose"], { env, stdin: "" });
  expect(verbose.stderr).toContain("serving over stdio: 0 plugins (0 tools)");
  expect(verbose.stderr).toContain("stopping: stdin closed");
});

test("a plugin approved by its path is served by a bare cxagent mcp, and by its name, as cxagent list shows it", async () => {
  using dir = tempDir();
  const configDir = join(dir.path, "config");
  const state = await approvedState(dir.path, [CALCULATOR]);
  const listed = await cli(["list", "--json", "--cwd", dir.path, "--state-dir", state, "--config-dir", configDir]);
  expect(JSON.parse(listed.stdout).plugins.map((p: { name: string; trust: string }) => [p.name, p.trust])).toEqual([["calculator", "approved"]]);
  for (const args of [[], ["calculator"]]) {
    await using server = await connect(args, { state, cwd: dir.path, configDir });
    expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
    const result = await server.client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } });
    expect(result.content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
    expect(server.stderr()).toBe("");
  }
});

test("a name neither found nor approved by path is refused, naming where it looked", async () => {
  using dir = tempDir();
  const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state") };
  const r = await cli(["mcp", "calculatr", "--cwd", dir.path], { env, stdin: "" });
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain("no plugin named 'calculatr'");
});
