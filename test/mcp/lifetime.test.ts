/**
 * `cxagent mcp` ends when its client goes away, and takes every plugin host with it (issue 16
 * point 11): stdin's end, EPIPE, SIGTERM, SIGHUP, the parent's death, SIGKILL of the client.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, CONFIG_DIR, fixture, fixtureLibrary, hostsOf, ROOT, until } from "../helpers.ts";
import { approvedState, raw } from "./_mcp.ts";

const PLUGINS = ["echo", "slow-invoke"];
let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-life-"));
  state = await approvedState(home, PLUGINS);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const ppidOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
};
/** The plugin hosts `server` started. */
const hostsUnder = (server: number) => PLUGINS.flatMap((p) => hostsOf(fixtureLibrary(p))).filter((pid) => alive(pid) && ppidOf(pid) === server);
const gone = async (pids: number[], what: string) => until(() => pids.every((pid) => !alive(pid)), 5000, what);

async function serving() {
  const server = raw([fixture("echo"), fixture("slow-invoke"), "--verbose"], { state });
  await server.initialize();
  server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo_this", arguments: {} } });
  server.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 1 } } });
  await server.response(1);
  await server.response(2);
  const hosts = hostsUnder(server.proc.pid);
  expect(hosts).toHaveLength(2);
  return { server, hosts };
}

test("stdin's end: exit 0, every plugin host gone; a call still running gets its answer first", async () => {
  const { server, hosts } = await serving();
  server.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 300 } } });
  expect(await server.end()).toBe(0);
  expect(server.messages().find((m) => m.id === 3)?.result.content[0].text).toBe("slept 300 ms");
  await gone(hosts, "the plugin hosts to end");
  expect(server.stderr()).toContain("stopping: stdin closed");
});

test.each(["SIGTERM", "SIGHUP", "SIGINT"] as const)("%s: exit 0, every plugin host gone", async (signal) => {
  const { server, hosts } = await serving();
  server.proc.kill(signal);
  expect(await server.proc.exited).toBe(0);
  await gone(hosts, "the plugin hosts to end");
  await until(() => server.stderr().includes(`stopping: ${signal}`), 2000, `the stop to be noted; stderr:\n${server.stderr()}`);
});

test("EPIPE: the client stops reading stdout; the next frame ends the server", async () => {
  const { server, hosts } = await serving();
  await server.stopReading();
  // Our end of the pipe closes a moment after the cancel: a frame written before that still fits
  // in the pipe, so keep sending until one meets the closed end.
  let exited = false;
  void server.proc.exited.then(() => (exited = true));
  for (let id = 4; !exited; id++) {
    try {
      server.send({ jsonrpc: "2.0", id, method: "ping" });
    } catch {
      break; // it has gone already
    }
    await until(() => exited, 100, "").catch(() => {});
    if (id > 200) throw new Error(`the server did not end on EPIPE; stderr:\n${server.stderr()}`);
  }
  expect(await server.proc.exited).toBe(0);
  await until(() => server.stderr().includes("stopping: stdout closed (EPIPE)"), 2000, `the stop to be noted; stderr:\n${server.stderr()}`);
  await gone([server.proc.pid, ...hosts], "the server and its plugin hosts to end");
});

async function doomedClient(mode: "sdk" | "fifo", fifo = "") {
  const stderrFile = join(home, `client-${mode}.stderr`);
  const client = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/mcp-client.ts"), mode, fifo, fixture("echo"), fixture("slow-invoke"), "--verbose", "--state-dir", state, "--config-dir", CONFIG_DIR], {
    cwd: ROOT,
    stdin: "pipe",
    stdout: "pipe",
    stderr: Bun.file(stderrFile),
    env: { ...process.env, NO_COLOR: "1" },
  });
  const reader = client.stdout.getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the client ended early: ${readFileSync(stderrFile, "utf8")}`);
    line += new TextDecoder().decode(value);
  }
  const pids = JSON.parse(line) as { client: number; server: number };
  return { client, pids, stderr: () => readFileSync(stderrFile, "utf8") };
}

test("SIGKILL of an SDK client: no cxagent or plugin-host process left within 5 s", async () => {
  const { client, pids, stderr } = await doomedClient("sdk", "");
  await until(() => hostsUnder(pids.server).length === 2, 5000, "both plugin hosts to run");
  const hosts = hostsUnder(pids.server);
  client.kill("SIGKILL");
  await client.exited;
  await gone([pids.server, ...hosts], "the server and its plugin hosts to end");
  expect(stderr()).toContain("stopping: stdin closed");
});

test("the parent dies while stdin stays open: the server notices and ends, with its plugin hosts", async () => {
  // The server's stdin is a FIFO this test holds open (read-write: opening never blocks).
  const fifo = join(home, "stdin.fifo");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const held = openSync(fifo, "r+");
  try {
    const { client, pids, stderr } = await doomedClient("fifo", fifo);
    // A plugin's host starts at its first call: one call to each, written into the server's stdin.
    const requests = [
      { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "fifo", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo_this", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 1 } } },
    ];
    writeSync(held, requests.map((r) => JSON.stringify(r) + "\n").join(""));
    await until(() => stderr().includes("serving over stdio") && hostsUnder(pids.server).length === 2, 10_000, "the server to be up");
    const hosts = hostsUnder(pids.server);
    client.kill("SIGKILL");
    await client.exited;
    await gone([pids.server, ...hosts], "the server and its plugin hosts to end");
    expect(stderr()).toContain("stopping: the parent process ended");
  } finally {
    closeSync(held);
  }
});
