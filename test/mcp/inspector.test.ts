/**
 * A second real client: @modelcontextprotocol/inspector-cli, non-interactive, lists and calls the
 * calculator through `cxagent mcp`. It resolves `../package.json` against its working directory,
 * so it runs from test/ (whose parent has one). It declares no elicitation capability, so a gated
 * call is denied by policy; and it exits 0 even for a result with isError.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALCULATOR, CONFIG_DIR, ROOT } from "../helpers.ts";
import { approvedState, CLI } from "./_mcp.ts";

const INSPECTOR = join(ROOT, "node_modules/@modelcontextprotocol/inspector-cli/build/cli.js");
let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-inspector-"));
  state = await approvedState(home, [CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

async function inspector(args: string[]) {
  const proc = Bun.spawn(["node", INSPECTOR, "--cli", ...CLI, "mcp", CALCULATOR, "--state-dir", state, "--config-dir", CONFIG_DIR, ...args], {
    cwd: join(ROOT, "test"),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`inspector-cli exited ${code}: ${stderr}`);
  return JSON.parse(stdout);
}

test("tools/list shows the calculator's three tools with their schemas", async () => {
  const listed = await inspector(["--method", "tools/list"]);
  expect(listed.tools.map((t: any) => t.name)).toEqual(["calc_add", "calc_multiply", "calc_divide"]);
  expect(listed.tools[1]._meta).toEqual({ "cxagent/plugin": "calculator", "cxagent/gated": false });
}, 30_000);

test("tools/call runs calc_multiply; a gated calc_add is denied by policy (no elicitation)", async () => {
  const multiplied = await inspector(["--method", "tools/call", "--tool-name", "calc_multiply", "--tool-arg", "a=6", "--tool-arg", "b=7"]);
  expect(multiplied).toMatchObject({ content: [{ type: "text", text: "6 * 7 = 42" }], isError: false });
  expect(multiplied).not.toHaveProperty("structuredContent");
  const denied = await inspector(["--method", "tools/call", "--tool-name", "calc_add", "--tool-arg", "a=2", "--tool-arg", "b=3"]);
  expect(denied).toMatchObject({ isError: true, _meta: { "cxagent/decidedBy": "policy", "cxagent/permissionDenied": true } });
  expect(denied.content[0].text).toContain("--allow-tool calculator/calc_add");
  // the other way out is a command that works as written (a grant; install-cli.test.ts runs it)
  expect(denied.content[0].text).toContain("cxagent grants --add 'plugin calculator tool calc_add'");
}, 30_000);
