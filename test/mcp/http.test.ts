/**
 * `cxagent mcp --http`: the official conformance suite (with the committed baseline of scenarios
 * that cannot apply), the json-schema-2020-12 scenario, and the request guard (Host, Origin,
 * bearer token). The suite's own output goes to a file: its "Total: N passed, M failed" line must
 * never reach this runner's stdout, where CI reads its verdict.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONFIG_DIR, fixture, ROOT, until } from "../helpers.ts";
import { approvedState, CLI } from "./_mcp.ts";

const SUITE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const BASELINE = join(import.meta.dir, "conformance-baseline.yml");

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-http-"));
  state = await approvedState(home, ["mcp-conformance"]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `cxagent mcp --http 127.0.0.1:0 …` (or another address), once it prints where it listens. */
async function httpServer(extra: string[] = [], env: Record<string, string> = {}, listen = "127.0.0.1:0") {
  const proc = Bun.spawn([...CLI, "mcp", fixture("mcp-conformance"), "--http", listen, ...extra, "--state-dir", state, "--config-dir", CONFIG_DIR], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  void (async () => {
    for await (const chunk of proc.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  const stdout = new Response(proc.stdout).text();
  await until(() => /at (http:\S+\/mcp)/.test(stderr), 15_000, `the server to listen; stderr:\n${stderr}`);
  const url = /at (http:\S+\/mcp)/.exec(stderr)![1]!;
  return {
    url,
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
      expect(await stdout).toBe(""); // over HTTP, stdout stays empty
    },
  };
}

/** Runs the conformance suite; its output goes to a file, never to this runner's stdout. */
async function conformance(url: string, args: string[]) {
  const out = mkdtempSync(join(home, "conformance-"));
  const log = join(out, "output.txt");
  const proc = Bun.spawn([process.execPath, SUITE, "server", "--url", url, "-o", join(out, "results"), ...args], {
    cwd: home,
    stdin: "ignore",
    stdout: Bun.file(log),
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  const results = readdirSync(join(out, "results")).map((dir) => ({
    scenario: dir.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, ""),
    checks: JSON.parse(readFileSync(join(out, "results", dir, "checks.json"), "utf8")) as { id: string; status: string; errorMessage?: string }[],
  }));
  return { code, results, output: () => `${readFileSync(log, "utf8")}\n${stderr}` };
}

const baseline = () => readFileSync(BASELINE, "utf8").split("\n").filter((l) => l.startsWith("  - ")).map((l) => l.slice(4).trim());

describe("the official conformance suite", () => {
  test("passes against cxagent mcp --http, every failure listed in the baseline with its reason", async () => {
    await using server = await httpServer();
    const run = await conformance(server.url, ["--expected-failures", BASELINE]);
    expect({ code: run.code, output: run.code === 0 ? "" : run.output() }).toEqual({ code: 0, output: "" });
    const expected = new Set(baseline());
    const failing = run.results.filter((r) => r.checks.some((c) => c.status === "FAILURE" || c.status === "WARNING")).map((r) => r.scenario);
    expect(failing.sort()).toEqual([...expected].sort());
    const passing = run.results.filter((r) => !expected.has(r.scenario)).map((r) => r.scenario);
    expect(passing.sort()).toEqual([
      "dns-rebinding-protection",
      "logging-set-level",
      "ping",
      "server-initialize",
      "server-sse-multiple-streams",
      "tools-call-elicitation",
      "tools-call-error",
      "tools-call-simple-text",
      "tools-call-with-logging",
      "tools-call-with-progress",
      "tools-list",
    ]);
    // Every baseline entry has its reason above it.
    const text = readFileSync(BASELINE, "utf8");
    for (const entry of expected) expect(text.slice(0, text.indexOf(`  - ${entry}\n`))).toMatch(/#[^\n]*\n(  - [^\n]+\n)*$/);
  }, 120_000);

  test("--scenario json-schema-2020-12 passes: $schema, $defs and additionalProperties survive tools/list", async () => {
    await using server = await httpServer();
    const run = await conformance(server.url, ["--scenario", "json-schema-2020-12"]);
    expect({ code: run.code, output: run.code === 0 ? "" : run.output() }).toEqual({ code: 0, output: "" });
    const checks = run.results.flatMap((r) => r.checks);
    expect(checks.map((c) => [c.id, c.status])).toEqual([
      ["json-schema-2020-12-tool-found", "SUCCESS"],
      ["json-schema-2020-12-$schema", "SUCCESS"],
      ["json-schema-2020-12-$defs", "SUCCESS"],
      ["json-schema-2020-12-additionalProperties", "SUCCESS"],
    ]);
  }, 60_000);
});

describe("the request guard", () => {
  const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
  const post = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: initialize });

  test("a foreign Host or Origin is 403 before anything is parsed; the loopback names pass", async () => {
    await using server = await httpServer();
    const port = new URL(server.url).port;
    expect((await post(server.url, { host: "evil.example.com" })).status).toBe(403);
    expect((await post(server.url, { host: `evil.example.com:${port}` })).status).toBe(403);
    expect((await post(server.url, { origin: "http://evil.example.com" })).status).toBe(403);
    expect((await post(server.url, { origin: "null" })).status).toBe(403);
    expect((await post(server.url, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await fetch(server.url.replace("/mcp", "/other"))).status).toBe(404);
    expect((await fetch(server.url, { headers: { "mcp-session-id": "no-such-session" } })).status).toBe(404);
  });

  test("--token: no or a wrong bearer token is 401; the right one, from $CXAGENT_MCP_TOKEN, works with the SDK client", async () => {
    await using server = await httpServer(["--token"], { CXAGENT_MCP_TOKEN: "correct-horse" });
    expect(server.stderr()).toContain("clients must send 'Authorization: Bearer <the token in CXAGENT_MCP_TOKEN>'");
    expect(server.stderr()).not.toContain("correct-horse");
    const refused = await post(server.url);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    expect((await post(server.url, { authorization: "Bearer wrong" })).status).toBe(401);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: "Bearer correct-horse" } } }));
    expect((await client.callTool({ name: "test_simple_text", arguments: {} })).content).toEqual([{ type: "text", text: "This is a simple text response for testing." }]);
    await client.close();
  });

  test("--token without $CXAGENT_MCP_TOKEN prints a fresh token to stderr", async () => {
    await using server = await httpServer(["--token"], { CXAGENT_MCP_TOKEN: "" });
    const token = /Authorization: Bearer ([A-Za-z0-9_-]{32})'/.exec(server.stderr())?.[1];
    expect(token).toBeDefined();
    expect((await post(server.url, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  test("a non-loopback address is refused unless --allow-remote", async () => {
    // With a deadline: a server that did start would not end by itself (exitCode is then null).
    const r = Bun.spawnSync([...CLI, "mcp", "--http", "0.0.0.0:0", "--state-dir", state], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" }, timeout: 10_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("refusing to serve MCP on 0.0.0.0, which is not a loopback address");
    expect(r.stderr.toString()).toContain("--allow-remote");
    expect(r.stdout.toString()).toBe("");
  });

  test("with --allow-remote, a bearer token is required even without --token; the Host is not checked", async () => {
    await using server = await httpServer(["--allow-remote"], { CXAGENT_MCP_TOKEN: "" }, "0.0.0.0:0");
    const token = /Authorization: Bearer ([A-Za-z0-9_-]{32})'/.exec(server.stderr())?.[1];
    expect(token).toBeDefined();
    const url = `http://127.0.0.1:${new URL(server.url).port}/mcp`;
    expect((await post(url)).status).toBe(401);
    expect((await post(url, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post(url, { authorization: `Bearer ${token}`, host: "cxagent.example.com" })).status).toBe(200);
  });
});
