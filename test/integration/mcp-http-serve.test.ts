/**
 * `serveHttp` (src/mcp/http.ts) in this process: a real Bun server on a real loopback port, the
 * SDK's real transport, and a hub over a real session serving no plugins — what the endpoint does
 * before a tool runs: the guard's statuses and bodies, the endpoint's path, sessions (the cap,
 * with and without a token, and which one a full table closes), the body cap at its edge, the SSE
 * retry field, remote mode, IPv6, and closing. Calls that run a plugin are test/mcp/http.test.ts
 * and test/mcp/http-limits.test.ts, through the CLI.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import type { Session } from "../../src/index.ts";
import { McpHub } from "../../src/mcp/hub.ts";
import { type HttpServer, type Listen, RETRY_MS, SESSION_CAP, serveHttp } from "../../src/mcp/http.ts";
import { fixture, openSession } from "../helpers.ts";

let session: Session;
let hub: McpHub;
beforeAll(async () => {
  session = await openSession();
  hub = new McpHub({ session, plugins: [], rules: [], version: "0.0.0-test", note: () => {}, warn: () => {}, logToStderr: () => {} });
});
afterAll(async () => {
  await session?.close();
});

const LOOPBACK: Listen = { host: "127.0.0.1", port: 0, loopback: true };
const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };

async function serving(token: string | null, listen = LOOPBACK, bodyCap?: number, pollMs?: number) {
  const server: HttpServer = serveHttp(hub, listen, token, bodyCap, pollMs);
  const auth: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(server.url, { method: "POST", headers: { ...JSON_HEADERS, ...auth, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  /** A new MCP session: its id, once the client said it is initialized. */
  const open = async (): Promise<string> => {
    const r = await post(INITIALIZE);
    expect(r.status).toBe(200);
    await r.text();
    const id = r.headers.get("mcp-session-id")!;
    const done = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
    expect(done.status).toBe(202);
    return id;
  };
  /** tools/list in session `id`: its HTTP status (the body read). */
  const list = async (id: string): Promise<number> => {
    const r = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
    await r.text();
    return r.status;
  };
  /**
   * Session `id`'s standalone SSE stream (GET), once its headers arrived: the SDK sends them with
   * its first event, so a log line is sent to every ready session until they do.
   */
  const stream = async (id: string): Promise<Response> => {
    const response = fetch(server.url, { headers: { ...auth, accept: "text/event-stream", "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" } });
    for (;;) {
      hub.log("probe", 3, "are you there");
      const done = await Promise.race([response, Bun.sleep(20).then(() => null)]);
      if (done) return done;
    }
  };
  return { url: server.url, post, open, list, stream, auth, close: () => server.close(), [Symbol.asyncDispose]: () => server.close() };
}

/** "ended" when `body` ends within 5 s (it ends at once when it does), else "still open". */
const within = (body: Promise<unknown>) => Promise.race([body.then(() => "ended"), Bun.sleep(5000).then(() => "still open")]);

/** The JSON-RPC error of a refused request: its status, its message, its content type. */
async function refusedWith(response: Response, status: number, message: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/json");
  expect(await response.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32000, message } });
}

describe("the guard, served", () => {
  test("a foreign Host is 403, before the path is looked at; a missing token is 401 with WWW-Authenticate: Bearer", async () => {
    await using server = await serving("t0ken-t0ken-t0ken");
    const port = new URL(server.url).port;
    const foreign = await server.post(INITIALIZE, { host: `evil.example:${port}` });
    expect(foreign.headers.get("www-authenticate")).toBeNull();
    await refusedWith(foreign, 403, `Forbidden: Host 'evil.example:${port}' is not this server's loopback address`);
    await refusedWith(await fetch(server.url.replace("/mcp", "/x"), { headers: { host: "evil" } }), 403, "Forbidden: Host 'evil' is not this server's loopback address");
    const unauthorized = await fetch(server.url, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(INITIALIZE) });
    expect(unauthorized.headers.get("www-authenticate")).toBe("Bearer");
    await refusedWith(unauthorized, 401, "Unauthorized: send the header 'Authorization: Bearer <token>' with the token cxagent mcp printed at start");
    expect((await server.post(INITIALIZE, { host: `localhost:${port}`, origin: `http://[::1]:${port}` })).status).toBe(200);
  });

  test("only /mcp is the endpoint; a query does not change the path", async () => {
    await using server = await serving(null);
    for (const path of ["/", "/mcp/", "/mcpx", "/x/mcp"]) await refusedWith(await fetch(server.url.replace("/mcp", path)), 404, "Not found: the MCP endpoint is /mcp");
    expect((await fetch(server.url + "?x=1", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(INITIALIZE) })).status).toBe(200);
  });

  test("without a session: only a POSTed initialize (alone or in a batch) opens one; anything else is 400 saying so", async () => {
    await using server = await serving(null);
    await refusedWith(await fetch(server.url, { headers: { accept: "text/event-stream" } }), 400, "Bad request: no session; POST an initialize request first");
    await refusedWith(await fetch(server.url, { method: "DELETE" }), 400, "Bad request: no session; POST an initialize request first");
    await refusedWith(await server.post("{not json"), 400, "Parse error: the body is not JSON");
    await refusedWith(await server.post({ jsonrpc: "2.0", id: 1, method: "tools/list" }), 400, "Bad request: no session; POST an initialize request first");
    await refusedWith(await server.post([{ jsonrpc: "2.0", id: 1, method: "tools/list" }]), 400, "Bad request: no session; POST an initialize request first");
    await refusedWith(await server.post({ ...INITIALIZE, method: "initialized" }), 400, "Bad request: no session; POST an initialize request first");
    const batch = await server.post([INITIALIZE]);
    expect(batch.status).toBe(200);
    expect(batch.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/);
    await batch.text();
  });

  test("a batch that holds anything but messages is the SDK's 400, not a crash: a number, null, a string", async () => {
    await using server = await serving(null);
    const id = await server.open();
    for (const body of ["[5]", "[null]", '"x"', "5", '[{"jsonrpc":"2.0","id":3,"method":"tools/list"},7]']) {
      const r = await server.post(body, { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { message: string } }).error.message).not.toContain("no session");
    }
    // an empty batch, or an initialize with another message, opens no session: the first is ours to refuse, the second the SDK's
    await refusedWith(await server.post([]), 400, "Bad request: no session; POST an initialize request first");
    const two = await server.post([INITIALIZE, { jsonrpc: "2.0", id: 2, method: "tools/list" }]);
    expect(two.status).toBe(400);
    expect(((await two.json()) as { error: { message: string } }).error.message).toContain("Only one initialization request is allowed");
  });

  test("in a session: an unknown id is 404, a body that is not JSON 400; the session answers", async () => {
    await using server = await serving(null);
    const id = await server.open();
    await refusedWith(await server.post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": "no-such-session" }), 404, "Session not found: initialize a new one");
    await refusedWith(await fetch(server.url, { headers: { "mcp-session-id": "no-such-session" } }), 404, "Session not found: initialize a new one");
    await refusedWith(await server.post("{", { "mcp-session-id": id }), 400, "Parse error: the body is not JSON");
    expect(await server.list(id)).toBe(200);
  });
});

describe("sessions", () => {
  test(`without a token: ${SESSION_CAP} sessions open, the next is 503 and none is closed; one closed (DELETE) makes room`, async () => {
    await using server = await serving(null);
    const ids: string[] = [];
    for (let i = 0; i < SESSION_CAP; i++) ids.push(await server.open());
    await refusedWith(await server.post(INITIALIZE), 503, `Service unavailable: ${SESSION_CAP} sessions are open; close one first (without a token, cxagent mcp never closes a session to make room)`);
    for (const id of ids) expect(await server.list(id)).toBe(200);
    const closed = await fetch(server.url, { method: "DELETE", headers: { "mcp-session-id": ids[0]!, "mcp-protocol-version": "2025-11-25" } });
    expect(closed.status).toBe(200);
    expect(await server.list(ids[0]!)).toBe(404);
    const again = await server.open();
    expect(await server.list(again)).toBe(200);
    await refusedWith(await server.post(INITIALIZE), 503, `Service unavailable: ${SESSION_CAP} sessions are open; close one first (without a token, cxagent mcp never closes a session to make room)`);
  }, 60_000);

  test(`with the token: past ${SESSION_CAP} sessions the least recently used one is closed, its stream ended, and only it`, async () => {
    await using server = await serving("t0ken-t0ken-t0ken");
    const ids: string[] = [];
    for (let i = 0; i < SESSION_CAP; i++) ids.push(await server.open());
    for (const id of ids) expect(await server.list(id)).toBe(200); // every one still open at the cap
    // the first used again: the second is now the least recently used
    expect(await server.list(ids[0]!)).toBe(200);
    const stream = await server.stream(ids[1]!);
    expect(stream.status).toBe(200);
    const ended = stream.text();
    // the GET just made the second the most recently used: use every other one after it
    for (const id of [ids[0]!, ...ids.slice(2)]) expect(await server.list(id)).toBe(200);
    const newest = await server.open();
    expect(await server.list(ids[1]!)).toBe(404);
    expect(await within(ended)).toBe("ended"); // the closed session's open stream too
    for (const id of [ids[0]!, ...ids.slice(2), newest]) expect(await server.list(id)).toBe(200);
  }, 60_000);

  test("the SSE retry field: 1 s, or --sse-poll-ms when shorter", async () => {
    for (const [pollMs, retry] of [[undefined, RETRY_MS], [300, 300], [5000, RETRY_MS]] as const) {
      await using server = await serving(null, LOOPBACK, undefined, pollMs);
      const id = await server.open();
      const r = await server.post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
      expect(r.headers.get("content-type")).toContain("text/event-stream");
      expect(await r.text()).toContain(`retry: ${retry}\n`);
    }
    expect(RETRY_MS).toBe(1000);
  });
});

describe("a running call", () => {
  test("--sse-poll-ms closes the stream of a tools/call whose id is a string, as of one whose id is a number", async () => {
    const plugin = await session.load(fixture("slow-invoke"));
    const served = new McpHub({ session, plugins: [plugin], rules: [], version: "0.0.0-test", note: () => {}, warn: () => {}, logToStderr: () => {} });
    const server = serveHttp(served, LOOPBACK, null, undefined, 200);
    try {
      const post = (body: unknown, headers: Record<string, string> = {}) => fetch(server.url, { method: "POST", headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
      const init = await post(INITIALIZE);
      await init.text();
      const headers = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" };
      expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, headers)).status).toBe(202);
      for (const id of ["call-a", 7]) {
        const began = performance.now();
        const stream = await post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "slow_invoke", arguments: { ms: 2500 } } }, headers);
        const text = await stream.text();
        // closed by the poll, long before the call could answer: the priming event alone
        expect(text).not.toContain('"result"');
        expect(performance.now() - began).toBeLessThan(2400);
      }
    } finally {
      await server.close();
    }
  }, 30_000);
});

describe("limits and listeners", () => {
  test("the body cap: a body of exactly the cap is read, one byte more is 413", async () => {
    await using server = await serving(null, LOOPBACK, 4096);
    const id = await server.open();
    const of = (bytes: number) => {
      const shell = (pad: string) => JSON.stringify({ jsonrpc: "2.0", method: "notifications/pad", params: { pad } });
      const body = shell("x".repeat(bytes - shell("").length));
      expect(Buffer.byteLength(body)).toBe(bytes);
      return body;
    };
    const fits = await server.post(of(4096), { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
    expect(fits.status).toBe(202);
    const over = await server.post(of(4097), { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" });
    expect(over.status).toBe(413);
    await over.text();
  });

  test("the default body cap is 64 MiB: 4.1 MiB (past the SDK's own 4 MiB) is read; 64 MiB and a byte is 413", async () => {
    await using server = await serving(null);
    const id = await server.open();
    const headers = { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" };
    const pad = (n: number) => JSON.stringify({ jsonrpc: "2.0", method: "notifications/pad", params: { pad: "x".repeat(n) } });
    expect((await server.post(pad(4.1 * 1024 * 1024), headers)).status).toBe(202);
    const over = await server.post(pad(64 * 1024 * 1024 + 1), headers);
    expect(over.status).toBe(413);
    await over.text();
  }, 30_000);

  test("remote mode: any Host, the token still required", async () => {
    await using server = await serving("t0ken-t0ken-t0ken", { host: "127.0.0.1", port: 0, loopback: false });
    expect((await server.post(INITIALIZE, { host: "cxagent.example.com" })).status).toBe(200);
    expect((await server.post(INITIALIZE, { host: "cxagent.example.com", authorization: "Bearer other" })).status).toBe(401);
  });

  test("an IPv6 loopback listener: its URL brackets the address, and its Host names pass", async () => {
    await using server = await serving(null, { host: "::1", port: 0, loopback: true });
    const port = new URL(server.url).port;
    expect(server.url).toBe(`http://[::1]:${port}/mcp`);
    expect((await server.post(INITIALIZE)).status).toBe(200);
    expect((await server.post(INITIALIZE, { host: `127.0.0.1:${port}` })).status).toBe(200);
    expect((await server.post(INITIALIZE, { host: `[::2]:${port}` })).status).toBe(403);
  });

  test("close: open streams end and the port no longer answers", async () => {
    const server = await serving(null);
    const id = await server.open();
    const stream = await server.stream(id);
    expect(stream.status).toBe(200);
    const ended = stream.text();
    await server.close();
    expect(await within(ended)).toBe("ended");
    expect(await fetch(server.url).then(() => "answered", () => "refused")).toBe("refused");
  });

  test("close does not wait for a client that never finishes sending its body", async () => {
    const server = await serving(null);
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{"jsonrpc":`);
    await Bun.sleep(100); // the request has reached the server, its body waits
    expect(await within(server.close())).toBe("ended");
    socket.destroy();
  });
});
