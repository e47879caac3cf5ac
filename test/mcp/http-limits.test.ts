/**
 * `cxagent mcp --http` as cxagent promises (issue 42 point 5): its own body cap (64 MiB by
 * default, not the SDK's 4 MiB; --max-body sets another), tested at its edges; a client that drops
 * its connection cancels its calls.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { CONFIG_DIR, fixture, ROOT, until } from "../helpers.ts";
import { approvedState, CLI, listening } from "./_mcp.ts";

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-limits-"));
  state = await approvedState(home, ["echo", "slow-invoke"]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

async function serving(extra: string[]) {
  const server = await listening([fixture("echo"), fixture("slow-invoke"), "--http", "127.0.0.1:0", "--no-token", "--verbose", ...extra], { state });
  const { url } = server;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const init = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "limits", version: "1" } } }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const session = { ...headers, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" };
  await fetch(url, { method: "POST", headers: session, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) }).then((r) => r.text());
  return {
    url,
    headers: session,
    stderr: server.stderr,
    post: (body: string, signal?: AbortSignal) => fetch(url, { method: "POST", headers: session, body, signal }),
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

/** A tools/call of echo_this whose JSON is exactly `bytes` long. */
function callOf(bytes: number): string {
  const shell = (pad: string) => JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "echo_this", arguments: { pad } } });
  const body = shell("x".repeat(bytes - shell("").length));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

test("--max-body 4096: a body of exactly 4096 bytes is served, one of 4097 is 413", async () => {
  await using server = await serving(["--max-body", "4096"]);
  const fits = await server.post(callOf(4096));
  expect(fits.status).toBe(200);
  expect(await fits.text()).toContain('"isError":false');
  const over = await server.post(callOf(4097));
  expect(over.status).toBe(413);
  await over.text();
}, 60_000);

test("by default a 4.1 MiB body is served (the SDK's own cap is 4 MiB); 64 MiB and a byte is 413", async () => {
  await using server = await serving([]);
  const fits = await server.post(callOf(Math.round(4.1 * 1024 * 1024)));
  expect(fits.status).toBe(200);
  await fits.text();
  const over = await server.post(callOf(64 * 1024 * 1024 + 1));
  expect(over.status).toBe(413);
  await over.text();
}, 60_000);

test("a client that drops its connection cancels its call", async () => {
  await using server = await serving([]);
  // A raw socket, closed once the answer's headers arrive: the client went away mid-call.
  const body = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 5000 } } });
  const { host, port, pathname } = new URL(server.url);
  const head = Object.entries({ ...server.headers, host, "content-length": String(Buffer.byteLength(body)) }).map(([k, v]) => `${k}: ${v}`).join("\r\n");
  const socket = connect(Number(port), "127.0.0.1");
  let got = "";
  socket.on("data", (chunk) => (got += chunk.toString()));
  socket.write(`POST ${pathname} HTTP/1.1\r\n${head}\r\n\r\n${body}`);
  await until(() => got.startsWith("HTTP/1.1 200"), 10_000, `the call's answer to start; got: ${got}`);
  socket.destroy();
  await until(() => server.stderr().includes("slow_invoke: cancelled by the client"), 4000, `the call to be cancelled; stderr:\n${server.stderr()}`);
}, 60_000);

/** The SSE events of a response body, read until it ends or `done` says so. */
async function events(response: Response, done: (data: string) => boolean = () => false) {
  const seen: { id?: string; data: string; retry?: string }[] = [];
  let buffer = "";
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += value;
    let at: number;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const field = (name: string) => block.split("\n").find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim();
      seen.push({ id: field("id"), data: field("data") ?? "", retry: field("retry") });
      if (done(seen.at(-1)!.data)) {
        await reader.cancel();
        return seen;
      }
    }
  }
  return seen;
}

test("--sse-poll-ms 300: a running call's stream is closed, not its call; the client resumes with Last-Event-ID and gets the result", async () => {
  await using server = await serving(["--sse-poll-ms", "300"]);
  const began = performance.now();
  const posted = await server.post(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 1500 } } }));
  expect(posted.headers.get("content-type")).toContain("text/event-stream");
  const first = await events(posted);
  // The stream ended long before the call could: a priming event (an id, no data, the retry field) and nothing else.
  expect(performance.now() - began).toBeLessThan(1400);
  expect(first).toEqual([{ id: expect.any(String), data: "", retry: "300" }]);
  const resumed = await fetch(server.url, { headers: { ...server.headers, "last-event-id": first[0]!.id! } });
  expect(resumed.status).toBe(200);
  const rest = await events(resumed, (data) => data.includes('"id":9'));
  const result = JSON.parse(rest.at(-1)!.data);
  expect(result.id).toBe(9);
  expect(result.result.isError).toBe(false);
  expect(server.stderr()).not.toContain("cancelled by the client");
  // An event id nobody was given is refused, and says so.
  const unknown = await fetch(server.url, { headers: { ...server.headers, "last-event-id": "no-such-stream.1" } });
  expect(unknown.status).toBe(400);
}, 60_000);

test("--sse-poll-ms needs --http", async () => {
  const proc = Bun.spawnSync([...CLI, "mcp", "--sse-poll-ms", "300", "--state-dir", state, "--config-dir", CONFIG_DIR], { cwd: ROOT, stdin: "ignore" });
  expect(proc.exitCode).toBe(2);
  expect(proc.stderr.toString()).toContain("--sse-poll-ms only applies to --http");
});
