/**
 * MCP over Streamable HTTP, at http://HOST:PORT/mcp. Loopback only unless the user says
 * otherwise, because every caller that reaches the port can run the served plugins:
 *  - the Host header must name the loopback address we listen on, and an Origin header, when a
 *    browser sends one, must too (DNS-rebinding protection);
 *  - a non-loopback address is refused unless --allow-remote is given, and then a bearer token is
 *    required (the Host check is dropped: the address is the user's choice, the token guards it);
 *  - on loopback too, a bearer token is required unless --no-token is given: Host and Origin
 *    checks stop browsers, not another local user's process.
 * Each client session has its own SDK transport and server. With a token, the least recently used
 * session is closed once there are more than SESSION_CAP (only the token's holder can open one, so
 * only they can push theirs out); without one, a new session past the cap is refused instead, so
 * that nobody can evict another's. A client without a token is never offered Allow always.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { isIP } from "node:net";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { CxError } from "../index.ts";
import { SessionEvents } from "./event-store.ts";
import type { McpHub } from "./hub.ts";
import { sdkServer } from "./sdk-server.ts";

export const SESSION_CAP = 64;
const BODY_CAP = 64 * 1024 * 1024;

export interface Listen {
  host: string;
  port: number;
  loopback: boolean;
}

export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || (isIP(bare) === 4 && bare.startsWith("127."));
}

/** Parses --http: `HOST:PORT`, `[IPv6]:PORT`, or `PORT` alone (127.0.0.1). Port 0 picks a free one. */
export function parseListen(text: string, allowRemote: boolean): Listen {
  const match = /^(?:(\[[^\]]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) {
    throw new CxError("E_USAGE", `--http '${text}' is not HOST:PORT`, { hint: "e.g. --http 127.0.0.1:8765 (port 0 picks a free one)" });
  }
  const given = match[1] ?? "127.0.0.1";
  const host = given === "localhost" ? "127.0.0.1" : given.replace(/^\[|\]$/g, "");
  const loopback = isLoopback(host);
  if (!loopback && !allowRemote) {
    throw new CxError("E_USAGE", `refusing to serve MCP on ${given}, which is not a loopback address: anyone who can reach it could run your plugins`, {
      hint: "serve on 127.0.0.1, or pass --allow-remote to serve there anyway (clients must then send the bearer token printed at start)",
    });
  }
  return { host, port, loopback };
}

export interface RequestPolicy {
  /** Host header values accepted (lowercase host:port); null accepts any (remote mode). */
  hosts: Set<string> | null;
  token: string | null;
}

/** The Host values a loopback listener answers to. */
export function loopbackHosts(host: string, port: number): Set<string> {
  const names = new Set(["127.0.0.1", "localhost", "[::1]", isIP(host) === 6 ? `[${host}]` : host]);
  return new Set([...names].map((n) => `${n}:${port}`.toLowerCase()));
}

/** Why a request is refused (status and message), or null. Checked before anything is parsed. */
export function refusal(headers: Headers, policy: RequestPolicy): { status: number; message: string } | null {
  const host = headers.get("host")?.toLowerCase() ?? null;
  if (policy.hosts && (host === null || !policy.hosts.has(host))) {
    return { status: 403, message: `Forbidden: Host '${host ?? ""}' is not this server's loopback address` };
  }
  const origin = headers.get("origin");
  if (origin !== null) {
    let originHost: string | null = null;
    try {
      const url = new URL(origin);
      if (url.protocol === "http:" || url.protocol === "https:") originHost = url.host.toLowerCase();
    } catch {
      originHost = null;
    }
    if (originHost === null || (policy.hosts ? !policy.hosts.has(originHost) : originHost !== host)) {
      return { status: 403, message: `Forbidden: Origin '${origin}' is not this server` };
    }
  }
  if (policy.token !== null && !sameSecret(headers.get("authorization") ?? "", `Bearer ${policy.token}`)) {
    return { status: 401, message: "Unauthorized: send the header 'Authorization: Bearer <token>' with the token cxagent mcp printed at start" };
  }
  return null;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Where the token came from: the environment, a file, or made now (then printed once). */
export type TokenSource = "env" | "file" | "fresh";

/**
 * The token: $CXAGENT_MCP_TOKEN when set, else the contents of `file` (a regular file of this
 * user's that nobody else can read or write), else a fresh random one.
 */
export function bearerToken(env: Record<string, string | undefined> = process.env, file?: string): { token: string; source: TokenSource } {
  const given = env.CXAGENT_MCP_TOKEN?.trim();
  if (given) return { token: given, source: "env" };
  if (file !== undefined) return { token: tokenFromFile(file), source: "file" };
  return { token: randomBytes(24).toString("base64url"), source: "fresh" };
}

function tokenFromFile(file: string): string {
  const bad = (why: string, hint: string) => new CxError("E_USAGE", `--token-file ${file}: ${why}`, { hint });
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw bad("it is a symbolic link", "give the file itself");
    throw bad(`it cannot be read (${(error as Error).message})`, "write the token into a file only you can read: umask 077; openssl rand -base64 32 > FILE");
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw bad("it is not a regular file", "write the token into a regular file");
    if (stat.uid !== process.getuid?.()) throw bad(`it belongs to uid ${stat.uid}, not to you`, "use a token file of your own");
    if ((stat.mode & 0o077) !== 0) throw bad(`other users may read or write it (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")})`, `chmod 600 ${file}`);
    if (stat.size > 4096) throw bad("it is larger than 4 KiB; it should hold the token alone", "write only the token into it");
    const token = readFileSync(fd, "utf8").trim();
    if (!/^[\x21-\x7e]{16,}$/.test(token)) throw bad("it does not hold a token (at least 16 printable characters, no spaces)", "write only the token into it: openssl rand -base64 32 > FILE");
    return token;
  } finally {
    closeSync(fd);
  }
}

const jsonError = (status: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });

export interface HttpServer {
  url: string;
  close(): Promise<void>;
}

/** The default cap on an HTTP request's body: the plugin protocol's line cap (SPEC §12), not the SDK's 4 MiB. */
export const HTTP_BODY_CAP = BODY_CAP;

/** The SSE `retry` field: how long a client waits before it reconnects to a closed stream. */
export const RETRY_MS = 1000;

export function serveHttp(hub: McpHub, listen: Listen, token: string | null, bodyCap = BODY_CAP, pollMs?: number): HttpServer {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  let policy: RequestPolicy = { hosts: null, token };

  const handle = async (request: Request): Promise<Response> => {
    const refused = refusal(request.headers, policy);
    if (refused) return jsonError(refused.status, refused.message, refused.status === 401 ? { "www-authenticate": "Bearer" } : {});
    if (new URL(request.url).pathname !== "/mcp") return jsonError(404, "Not found: the MCP endpoint is /mcp");
    const id = request.headers.get("mcp-session-id");
    if (id !== null) {
      const transport = sessions.get(id);
      if (!transport) return jsonError(404, "Session not found: initialize a new one");
      sessions.delete(id); // most recently used goes last
      sessions.set(id, transport);
      if (request.method !== "POST") return transport.handleRequest(request);
      let posted: unknown;
      try {
        posted = await request.json();
      } catch {
        return jsonError(400, "Parse error: the body is not JSON");
      }
      if (pollMs !== undefined) pollCalls(transport, posted, pollMs);
      cancelOnDrop(request, transport, posted);
      return transport.handleRequest(request, { parsedBody: posted });
    }
    if (request.method !== "POST") return jsonError(400, "Bad request: no session; POST an initialize request first");
    let body: unknown;
    try {
      body = await request.json();
    } catch {
      return jsonError(400, "Parse error: the body is not JSON");
    }
    const initializes = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    if (!initializes) return jsonError(400, "Bad request: no session; POST an initialize request first");
    // Anyone may connect without a token: a full table is refused, never emptied for them.
    if (token === null && sessions.size >= SESSION_CAP) {
      return jsonError(503, `Service unavailable: ${SESSION_CAP} sessions are open; close one first (without a token, cxagent mcp never closes a session to make room)`);
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      maxRequestBodySize: bodyCap,
      eventStore: new SessionEvents(),
      retryInterval: Math.min(RETRY_MS, pollMs ?? RETRY_MS),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, transport);
        while (token !== null && sessions.size > SESSION_CAP) {
          const [oldest, old] = sessions.entries().next().value!;
          sessions.delete(oldest);
          void old.close();
        }
      },
      onsessionclosed: (sessionId) => {
        sessions.delete(sessionId);
      },
    });
    await sdkServer(hub, { authenticated: token !== null }).connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
  };

  const server = Bun.serve({
    hostname: listen.host,
    port: listen.port,
    // SSE streams stay open through long calls; the transport sends a keep-alive every 15 s.
    idleTimeout: 60,
    maxRequestBodySize: bodyCap,
    fetch: handle,
  });
  const port = server.port!;
  if (listen.loopback) policy = { hosts: loopbackHosts(listen.host, port), token };
  const shown = isIP(listen.host) === 6 ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${shown}:${port}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
      sessions.clear();
      await server.stop(true);
    },
  };
}

/**
 * A client that drops its connection while its requests run cancels them (issue 42 point 5), as
 * `notifications/cancelled` would: the plugin's call is abandoned and nothing is answered.
 */
function cancelOnDrop(request: Request, transport: WebStandardStreamableHTTPServerTransport, body: unknown) {
  const ids = requestIds(body);
  if (ids.length === 0) return;
  request.signal.addEventListener(
    "abort",
    () => {
      for (const requestId of ids) {
        transport.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "the client dropped its connection" } });
      }
    },
    { once: true },
  );
}

/** The ids of the requests (not notifications) in a posted message or batch. */
function requestIds(body: unknown, method?: string): (string | number)[] {
  return (Array.isArray(body) ? body : [body]).flatMap((m) =>
    m !== null && typeof m === "object" && "method" in m && (method === undefined || m.method === method) && "id" in m && (typeof m.id === "string" || typeof m.id === "number") ? [m.id] : [],
  );
}

/**
 * `--sse-poll-ms`: a tools/call still running after `pollMs` has its SSE stream closed by cxagent
 * (SEP-1699 polling), which frees the connection; the client reconnects after the `retry` interval
 * with Last-Event-ID and gets the rest from the session's events, the result included. The call
 * goes on: a stream the server ends is no dropped client (its request's signal does not abort).
 */
function pollCalls(transport: WebStandardStreamableHTTPServerTransport, body: unknown, pollMs: number) {
  const ids = requestIds(body, "tools/call");
  if (ids.length === 0) return;
  setTimeout(() => {
    for (const id of ids) transport.closeSSEStream(id); // nothing, when the call has answered
  }, pollMs).unref();
}
