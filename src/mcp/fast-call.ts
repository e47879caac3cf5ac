/**
 * The stdio fast path for `tools/call` (issue 42 point 1). Profiled through `cxagent mcp` (Bun's
 * --cpu-prof, the calculator's calc_multiply, 20,000 calls): about a quarter of the server's CPU
 * went to the SDK checking each message with zod (the transport's JSONRPCMessage, the Protocol's
 * CallToolRequest, the result) before and after the library's own work. A `tools/call` whose
 * params are plainly well formed (a string name, an object of arguments or none, a `_meta` with
 * at most a progress token) is checked here by hand and handed to the hub directly; its answer is
 * written as the SDK would write it. Anything else (a malformed call, tasks, other methods) takes
 * the SDK's path, unchanged. Cancellation (`notifications/cancelled`) of a call on this path is
 * seen here; progress and logs go out through the same transport, elicitation through the SDK's
 * Server (stdio-front.ts loads it for that).
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { CallExtra, McpHub, Peer } from "./hub.ts";

export interface FastCall {
  id: string | number;
  params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number } };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string | number => typeof v === "string" || (typeof v === "number" && Number.isInteger(v));

/** The call, when `message` is a `tools/call` request the fast path may serve; else null. */
export function fastCallOf(message: unknown): FastCall | null {
  if (!isPlainObject(message) || message.method !== "tools/call" || message.jsonrpc !== "2.0" || !isId(message.id)) return null;
  const params = message.params;
  if (!isPlainObject(params) || typeof params.name !== "string") return null;
  for (const key in params) {
    if (key === "name") continue;
    if (key === "arguments" && (params.arguments === undefined || isPlainObject(params.arguments))) continue;
    if (key === "_meta" && isPlainObject(params._meta) && onlyProgressToken(params._meta)) continue;
    return null;
  }
  for (const key in message) if (key !== "jsonrpc" && key !== "id" && key !== "method" && key !== "params") return null;
  return message as unknown as FastCall;
}

function onlyProgressToken(meta: Record<string, unknown>): boolean {
  for (const key in meta) if (key !== "progressToken" || !isId(meta.progressToken)) return false;
  return true;
}

/** The request a `notifications/cancelled` cancels, when `message` is one. */
export function cancelledId(message: unknown): { id: string | number; reason: unknown } | null {
  if (!isPlainObject(message) || message.method !== "notifications/cancelled" || !isPlainObject(message.params)) return null;
  return isId(message.params.requestId) ? { id: message.params.requestId, reason: message.params.reason } : null;
}

/** Serves fast calls of one connection: answers through `send`, as the SDK's Protocol would. */
export class FastCalls {
  private readonly running = new Map<string | number, AbortController>();

  constructor(
    private readonly hub: McpHub,
    private readonly peer: Peer,
    /** A request to the client (an elicitation), through the SDK's Server. */
    private readonly request: CallExtra["sendRequest"],
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
    private readonly authenticated: boolean,
  ) {}

  /** Whether `id` is a call on this path that has not answered yet. */
  has(id: string | number): boolean {
    return this.running.has(id);
  }

  call(call: FastCall): void {
    const controller = new AbortController();
    this.running.set(call.id, controller);
    const extra: CallExtra = {
      signal: controller.signal,
      sendNotification: (notification) => this.send({ jsonrpc: "2.0", ...notification } as JSONRPCMessage),
      sendRequest: this.request,
    };
    this.hub.callTool(this.peer, call.params, extra, this.authenticated).then(
      (result) => this.answer(call.id, controller, { jsonrpc: "2.0", id: call.id, result }),
      (error: unknown) => this.answer(call.id, controller, errorAnswer(call.id, error)),
    );
  }

  /** `notifications/cancelled`: the call is abandoned, and (as the SDK does) never answered. */
  cancel(id: string | number, reason: unknown): void {
    this.running.get(id)?.abort(reason);
  }

  private answer(id: string | number, controller: AbortController, message: object) {
    if (this.running.get(id) === controller) this.running.delete(id);
    if (controller.signal.aborted) return;
    this.send(message as JSONRPCMessage).catch(() => {});
  }
}

/** A request's error answer, as the SDK's Protocol words a handler's error. */
export function errorAnswer(id: string | number, error: unknown): JSONRPCMessage {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const data = (error as { data?: unknown } | null)?.data;
  return { jsonrpc: "2.0", id, error: { code: Number.isSafeInteger(code) ? (code as number) : -32603, message: message || "Internal error", ...(data !== undefined ? { data } : {}) } };
}
