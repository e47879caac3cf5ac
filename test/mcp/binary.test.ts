/**
 * `cxagent mcp` from the compiled binary (issue 16 point 12), copied alone to a folder with no C
 * compiler on PATH: an SDK client lists and calls the calculator over stdio.
 */
import { beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { CALCULATOR, copyFixture, ROOT, tempDir } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

beforeAll(() => {
  const built = Bun.spawnSync([process.execPath, "scripts/compile.ts"], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`compile failed: ${built.stderr}`);
}, 120_000);

test("dist/cxagent mcp serves the calculator to the SDK client", async () => {
  using dir = tempDir();
  const binary = join(dir.path, "cxagent");
  copyFileSync(join(ROOT, "dist/cxagent"), binary);
  Bun.spawnSync(["chmod", "+x", binary]);
  mkdirSync(join(dir.path, "empty-bin"));
  const state = await approvedState(dir.path, [CALCULATOR]);
  const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path };
  await using server = await connect([CALCULATOR], { state, cwd: dir.path, bin: [binary], env });
  expect(server.client.getServerVersion()?.name).toBe("cxagent");
  expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
  const result = await server.client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } });
  expect(result.content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
  // An agent CLI logs the server's stderr (Claude Code as [ERROR]): an ordinary start says nothing.
  expect(server.stderr()).toBe("");
}, 30_000);

test("dist/cxagent mcp serves a Cortex native plugin to the SDK client", async () => {
  using dir = tempDir();
  const binary = join(dir.path, "cxagent");
  copyFileSync(join(ROOT, "dist/cxagent"), binary);
  Bun.spawnSync(["chmod", "+x", binary]);
  mkdirSync(join(dir.path, "empty-bin"));
  const plugin = copyFixture("cortex-basic", dir.path);
  const state = await approvedState(dir.path, [plugin]);
  const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path };
  await using server = await connect([plugin, "--verbose"], { state, cwd: dir.path, bin: [binary], env });
  expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("invocation");
  const result = await server.client.callTool({ name: "echo", arguments: { over: "stdio" } });
  expect(result.content).toEqual([{ type: "text", text: '{"over":"stdio"}' }]);
  expect(server.stderr()).toContain("serving over stdio: 1 plugin (12 tools): cortex-basic");
}, 30_000);
