/**
 * `cxagent mcp --http`: the official conformance suite (with the committed baseline of scenarios
 * that cannot apply), the json-schema-2020-12 scenario, and the request guard (Host, Origin,
 * bearer token). The suite's own output goes to a file: its "Total: N passed, M failed" line must
 * never reach this runner's stdout, where CI reads its verdict.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONFIG_DIR, fixture, ROOT, until } from "../helpers.ts";
import { approvedState, CLI } from "./_mcp.ts";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SESSION_CAP } from "../../src/mcp/http.ts";
import { LOCAL_USER, localUser, type LocalUser } from "../local-user.ts";

const SUITE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
/** The newest release, an alpha (package.json aliases it): its active suite and its draft scenarios. */
const SUITE_NEXT = join(ROOT, "node_modules/@modelcontextprotocol/conformance-next/dist/index.js");
const BASELINE_NEXT = join(import.meta.dir, "conformance-next-baseline.yml");
const BASELINE = join(import.meta.dir, "conformance-baseline.yml");

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-http-"));
  state = await approvedState(home, ["mcp-conformance"]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `cxagent mcp --http 127.0.0.1:0 …` (or another address), once it prints where it listens. */
function httpServer(extra: string[] = [], env: Record<string, string> = {}, listen = "127.0.0.1:0") {
  return httpServerIn(ROOT, extra, env, listen);
}

/** The same, in the project folder `cwd` (where grants are scoped). */
async function httpServerIn(cwd: string, extra: string[] = [], env: Record<string, string> = {}, listen = "127.0.0.1:0") {
  const proc = Bun.spawn([...CLI, "mcp", fixture("mcp-conformance"), "--http", listen, ...extra, "--state-dir", state, "--config-dir", CONFIG_DIR], {
    cwd,
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
async function conformance(url: string, args: string[], suite = SUITE) {
  const out = mkdtempSync(join(home, "conformance-"));
  const log = join(out, "output.txt");
  const proc = Bun.spawn([process.execPath, suite, "server", "--url", url, "-o", join(out, "results"), ...args], {
    cwd: home,
    stdin: "ignore",
    stdout: Bun.file(log),
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  const results = readdirSync(join(out, "results")).map((dir) => ({
    scenario: dir.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, ""),
    // A scenario that threw before its first check writes no checks.json (the suite counts it failed).
    checks: (existsSync(join(out, "results", dir, "checks.json"))
      ? JSON.parse(readFileSync(join(out, "results", dir, "checks.json"), "utf8"))
      : [{ id: "no-checks", status: "FAILURE" }]) as { id: string; status: string; errorMessage?: string }[],
  }));
  return { code, results, output: () => `${readFileSync(log, "utf8")}\n${stderr}` };
}

const baseline = (file = BASELINE) => readFileSync(file, "utf8").split("\n").filter((l) => l.startsWith("  - ")).map((l) => l.slice(4).trim());

describe("the official conformance suite", () => {
  // The suite cannot send a bearer token: it runs against --no-token, which says what it gives up.
  test("passes against cxagent mcp --http --no-token, every failure listed in the baseline with its reason", async () => {
    await using server = await httpServer(["--no-token"]);
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
      "prompts-get-simple",
      "prompts-get-with-args",
      "prompts-list",
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

  test("the newest release (0.2.0-alpha.12), every suite including the drafts: every failure listed in its baseline with its reason", async () => {
    // server-sse-polling: test_reconnection answers after 800 ms; cxagent closes its stream at 200.
    await using server = await httpServer(["--no-token", "--sse-poll-ms", "200"]);
    const run = await conformance(server.url, ["--suite", "all", "--expected-failures", BASELINE_NEXT], SUITE_NEXT);
    expect({ code: run.code, output: run.code === 0 ? "" : run.output() }).toEqual({ code: 0, output: "" });
    const expected = new Set(baseline(BASELINE_NEXT));
    const failing = run.results.filter((r) => r.checks.some((c) => c.status === "FAILURE")).map((r) => r.scenario);
    expect(failing.sort()).toEqual([...expected].sort());
    // What the older release passes, the newer passes too (and the session lifecycle, new in it).
    const passing = new Set(run.results.filter((r) => !expected.has(r.scenario)).map((r) => r.scenario));
    for (const scenario of ["server-sse-polling", "server-initialize", "server-session-lifecycle", "tools-list", "tools-call-elicitation", "prompts-get-with-args", "dns-rebinding-protection"]) expect(passing).toContain(scenario);
    const text = readFileSync(BASELINE_NEXT, "utf8");
    for (const entry of expected) expect(text.slice(0, text.indexOf(`  - ${entry}\n`))).toMatch(/#[^\n]*\n(  - [^\n]+\n)*$/);
  }, 180_000);

  test("--scenario json-schema-2020-12 passes: $schema, $defs and additionalProperties survive tools/list", async () => {
    await using server = await httpServer(["--no-token"]);
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
    await using server = await httpServer(["--no-token"]);
    const port = new URL(server.url).port;
    expect((await post(server.url, { host: "evil.example.com" })).status).toBe(403);
    expect((await post(server.url, { host: `evil.example.com:${port}` })).status).toBe(403);
    expect((await post(server.url, { origin: "http://evil.example.com" })).status).toBe(403);
    expect((await post(server.url, { origin: "null" })).status).toBe(403);
    expect((await post(server.url, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await fetch(server.url.replace("/mcp", "/other"))).status).toBe(404);
    expect((await fetch(server.url, { headers: { "mcp-session-id": "no-such-session" } })).status).toBe(404);
  });

  test("by default, on loopback too: no or a wrong bearer token is 401; the right one, from $CXAGENT_MCP_TOKEN, works with the SDK client", async () => {
    await using server = await httpServer([], { CXAGENT_MCP_TOKEN: "correct-horse" });
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

  test("without $CXAGENT_MCP_TOKEN a fresh token is printed to stderr, once; --token says the same as the default", async () => {
    for (const extra of [[], ["--token"]]) {
      await using server = await httpServer(extra, { CXAGENT_MCP_TOKEN: "" });
      const token = /Authorization: Bearer ([A-Za-z0-9_-]{32})'/.exec(server.stderr())?.[1];
      expect(token).toBeDefined();
      expect(server.stderr().split(token!).length).toBe(2);
      expect((await post(server.url)).status).toBe(401);
      expect((await post(server.url, { authorization: `Bearer ${token}` })).status).toBe(200);
    }
  });

  test("--token-file: a 0600 file of yours gives the token; a file others can read, a link, or one without a token is refused, naming it", async () => {
    const dir = mkdtempSync(join(home, "token-"));
    const file = join(dir, "token");
    writeFileSync(file, "a-token-of-at-least-16\n", { mode: 0o600 });
    {
      await using server = await httpServer(["--token-file", file], { CXAGENT_MCP_TOKEN: "" });
      expect(server.stderr()).toContain(`clients must send 'Authorization: Bearer <the token in ${file}>'`);
      expect(server.stderr()).not.toContain("a-token-of-at-least-16");
      expect((await post(server.url)).status).toBe(401);
      expect((await post(server.url, { authorization: "Bearer a-token-of-at-least-16" })).status).toBe(200);
    }
    const refused = (path: string) => {
      const r = Bun.spawnSync([...CLI, "mcp", "--http", "127.0.0.1:0", "--token-file", path, "--state-dir", state], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1", CXAGENT_MCP_TOKEN: "" }, timeout: 10_000 });
      expect(r.exitCode).toBe(2);
      expect(r.stdout.toString()).toBe("");
      return r.stderr.toString();
    };
    chmodSync(file, 0o644);
    expect(refused(file)).toContain(`--token-file ${file}: other users may read or write it (mode 0644)`);
    chmodSync(file, 0o600);
    symlinkSync(file, join(dir, "link"));
    expect(refused(join(dir, "link"))).toContain(`--token-file ${join(dir, "link")}: it is a symbolic link`);
    writeFileSync(join(dir, "short"), "short\n", { mode: 0o600 });
    expect(refused(join(dir, "short"))).toContain(`--token-file ${join(dir, "short")}: it does not hold a token`);
  });

  test("--no-token says what it gives up, and cannot be combined with --allow-remote", async () => {
    {
      await using server = await httpServer(["--no-token"]);
      expect(server.stderr()).toContain("--no-token: any local process, of any user, can call the served tools; such clients are never offered Allow always");
      expect((await post(server.url)).status).toBe(200);
    }
    const r = Bun.spawnSync([...CLI, "mcp", "--http", "0.0.0.0:0", "--allow-remote", "--no-token", "--state-dir", state], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" }, timeout: 10_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("--no-token cannot be used with --allow-remote");
    const help = Bun.spawnSync([...CLI, "mcp", "--help"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    expect(help.stdout.toString().replace(/\s+/g, " ")).toContain("any process of any user on this machine can then run your served tools");
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

describe("who is calling", () => {
  const asked = (client: Client, answer: () => { action: "accept" | "decline"; content?: Record<string, string> }, log: unknown[]) =>
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      log.push(request.params);
      return answer();
    });
  const grants = () => {
    try {
      return (JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")) as { grants: { scope: string; rule: string }[] }).grants;
    } catch {
      return [];
    }
  };

  test("a client without a token is never offered Allow always, and answering it anyway stores nothing and denies the call", async () => {
    const project = mkdtempSync(join(home, "project-"));
    await using server = await httpServerIn(project, ["--no-token"]);
    const client = new Client({ name: "anyone", version: "1" }, { capabilities: { elicitation: {} } });
    const log: any[] = [];
    asked(client, () => ({ action: "accept", content: { decision: "allow_always" } }), log);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const result = await client.callTool({ name: "test_elicitation", arguments: { message: "m" } });
    expect(result.isError).toBe(true);
    expect(log).toHaveLength(1);
    expect(log[0].requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    expect(log[0].message).toContain("Allow always is not offered for this call.");
    expect(grants().filter((g) => g.scope === project)).toEqual([]);
    await client.close();
  });

  test("with the token, Always is offered and stored; each client's question goes to that client alone", async () => {
    const project = mkdtempSync(join(home, "project-"));
    await using server = await httpServerIn(project, [], { CXAGENT_MCP_TOKEN: "the-users-own-token" });
    const connect = async (name: string, log: unknown[], decision: string) => {
      const client = new Client({ name, version: "1" }, { capabilities: { elicitation: {} } });
      asked(client, () => ({ action: "accept", content: { decision } }), log);
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: "Bearer the-users-own-token" } } }));
      return client;
    };
    const logA: any[] = [];
    const logB: any[] = [];
    const a = await connect("a", logA, "deny");
    const b = await connect("b", logB, "allow_always");
    expect((await b.callTool({ name: "test_elicitation", arguments: { message: "b's" } })).isError).toBe(false);
    expect(logA).toEqual([]); // A was never asked about B's call
    expect(logB).toHaveLength(1);
    expect(logB[0].requestedSchema.properties.decision.enum).toEqual(["allow_once", "allow_always", "deny"]);
    expect(grants().filter((g) => g.scope === project).map((g) => g.rule)).toEqual(["plugin mcp-conformance tool test_elicitation"]);
    await a.close();
    await b.close();
  });
});

describe.skipIf(!LOCAL_USER)("a second local user", () => {
  let user: LocalUser;
  beforeAll(() => {
    user = localUser();
  });
  afterAll(() => user?.[Symbol.dispose]());

  /** The other user sends `n` initialize requests with curl; the HTTP status of each. */
  const initializeAs = (url: string, n: number) => {
    const r = user.run([
      "sh",
      "-c",
      `i=0; while [ $i -lt "$2" ]; do curl -s -o /dev/null -w '%{http_code}\\n' -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' --data "$3" "$1"; i=$((i+1)); done`,
      "attack",
      url,
      String(n),
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "other-user", version: "1" } } }),
    ]);
    expect(r.stderr).toBe("");
    return r.stdout.trim().split("\n").map(Number);
  };
  const callAs = (url: string) =>
    user.run(["curl", "-s", "-w", "\\n%{http_code}", "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream", "--data", JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "test_simple_text", arguments: {} } }), url]).stdout;

  test("connecting to the default --http without the token is refused, every time, with 401 saying what to send; the user's session goes on", async () => {
    await using server = await httpServer([], { CXAGENT_MCP_TOKEN: "" });
    const token = /Authorization: Bearer ([A-Za-z0-9_-]{32})'/.exec(server.stderr())![1]!;
    const client = new Client({ name: "the-user", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    const statuses = initializeAs(server.url, SESSION_CAP + 1);
    expect(new Set(statuses)).toEqual(new Set([401]));
    const call = callAs(server.url);
    expect(call).toContain("Unauthorized: send the header 'Authorization: Bearer <token>'");
    expect(call.trim().endsWith("401")).toBe(true);
    expect((await client.callTool({ name: "test_simple_text", arguments: {} })).isError).toBeFalsy();
    await client.close();
  });

  test(`with --no-token, ${SESSION_CAP + 1} sessions from the other user do not evict the user's: past the cap new ones are refused (503)`, async () => {
    await using server = await httpServer(["--no-token"]);
    const client = new Client({ name: "the-user", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const statuses = initializeAs(server.url, SESSION_CAP + 1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(SESSION_CAP - 1);
    expect(statuses.filter((s) => s === 503)).toHaveLength(2);
    expect((await client.callTool({ name: "test_simple_text", arguments: {} })).isError).toBeFalsy();
    await client.close();
  }, 60_000);
});
