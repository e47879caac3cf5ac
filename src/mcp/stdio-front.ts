/**
 * `cxagent mcp` over stdio, served by our own code for what a client asks most: `initialize`,
 * `notifications/initialized`, `ping`, `tools/list`, `logging/setLevel`, every plainly
 * well-formed `tools/call` (fast-call.ts) with the cancellation of such a call, and -32601 for a
 * method nothing serves (a client probing resources/list). Profiled (issue 42
 * point 2), the SDK's schemas and its JSON Schema validator were about a third of the CPU the
 * server spent before `tools/list` was answered, and a few MiB it kept. Everything else — prompts,
 * a malformed or unusual message, a client's answer, an elicitation to send — goes to the SDK's
 * `Server` (sdk-server.ts), loaded and connected the first time one comes; it is first told the
 * `initialize` this front answered (its own answer dropped), so it knows the client as the front
 * does. What the front answers is what the SDK's `Server` answers: anything it is not sure of (an
 * unknown capability, `_meta` in params, an id or key out of the ordinary) is the SDK's.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ClientCapabilities, Implementation, JSONRPCMessage, LoggingMessageNotification } from "@modelcontextprotocol/sdk/types.js";
import { cancelledId, errorAnswer, fastCallOf, FastCalls } from "./fast-call.ts";
import { type CallExtra, type McpHub, METHOD_NOT_FOUND, type Peer } from "./hub.ts";
import type { StdioTransport } from "./stdio.ts";
import { MCP_LEVELS, type McpLevel } from "./tools.ts";

/** The protocol versions the SDK's `Server` accepts, newest first (its SUPPORTED_PROTOCOL_VERSIONS; a unit test holds them equal). */
export const PROTOCOL_VERSIONS: readonly string[] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];
/** The methods a handler of the SDK's Server serves (sdk-server.ts; tools/call through its fallback). */
const SDK_METHODS: readonly string[] = ["initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "prompts/list", "prompts/get"];
/** The id of the `initialize` the SDK's Server is told again; its answer goes nowhere. */
const REPLAYED = "cxagent/replayed-initialize";

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string | number => typeof v === "string" || (typeof v === "number" && Number.isInteger(v));
const onlyKeys = (o: Record<string, unknown>, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k));

export class StdioFront implements Peer {
  private init: { params: Record<string, unknown>; capabilities: ClientCapabilities; clientInfo: Implementation } | null = null;
  private initializedSeen = false;
  private sdkServer: Promise<Server> | null = null;
  private server: Server | null = null;
  private readonly fast: FastCalls;
  private readonly link: SdkLink;

  constructor(
    private readonly hub: McpHub,
    private readonly transport: StdioTransport,
    /** A diagnostic line (said with --verbose): the SDK's loading is one. */
    private readonly note: (line: string) => void = () => {},
  ) {
    const request = ((...args: Parameters<Server["request"]>) => this.sdk().then((s) => s.request(...args))) as CallExtra["sendRequest"];
    this.fast = new FastCalls(hub, this, request, (message) => transport.send(message), true);
    this.link = new SdkLink(transport);
    hub.connected(this, true); // our parent started us: it is the user
    transport.front = (message) => this.take(message);
    transport.beforeSdk = (message) => this.sdk(message).then(() => {});
    const onclose = transport.onclose;
    transport.onclose = () => {
      onclose?.();
      this.link.onclose?.();
      hub.closed(this);
    };
  }

  /** Serves `message` when it is one of ours; false leaves it to the SDK's side. */
  take(message: unknown): boolean {
    if (!isPlainObject(message) || message.jsonrpc !== "2.0" || typeof message.method !== "string") return false;
    const call = fastCallOf(message);
    if (call) {
      this.fast.call(call);
      return true;
    }
    const cancelled = cancelledId(message);
    if (cancelled && this.fast.has(cancelled.id)) {
      this.fast.cancel(cancelled.id, cancelled.reason);
      return true;
    }
    const params = message.params === undefined ? {} : message.params;
    if (!isPlainObject(params) || "_meta" in params) return false;
    if (!("id" in message)) return onlyKeys(message, ["jsonrpc", "method", "params"]) && this.notified(message.method, params);
    if (!isId(message.id) || !onlyKeys(message, ["jsonrpc", "id", "method", "params"])) return false;
    const answer = this.answer(message.method, params);
    if (answer === null) return false;
    const { id } = message;
    let reply: JSONRPCMessage;
    try {
      reply = { result: answer(), jsonrpc: "2.0", id } as JSONRPCMessage; // the key order the SDK writes
    } catch (error) {
      reply = errorAnswer(id, error);
    }
    void this.transport.send(reply);
    return true;
  }

  /** A notification: served when the SDK's side is not needed for it. */
  private notified(method: string, params: Record<string, unknown>): boolean {
    // Once the SDK's Server is there, it sees every notification, as it would have.
    if (this.sdkServer) return false;
    if (method === "notifications/initialized") {
      if (Object.keys(params).length > 0) return false;
      this.initializedSeen = true;
      this.hub.initialized(this);
    }
    // Any other (a cancellation of nothing running, roots changed, …): the SDK's Server has no handler that would answer it.
    return true;
  }

  /** How a request is answered here (it may throw an error to answer); null leaves it to the SDK's side. */
  private answer(method: string, params: Record<string, unknown>): (() => Record<string, unknown>) | null {
    if (method === "ping") return Object.keys(params).length === 0 ? () => ({}) : null;
    if (method === "tools/list") {
      if (!onlyKeys(params, ["cursor"]) || (params.cursor !== undefined && typeof params.cursor !== "string")) return null;
      return () => ({ ...this.hub.listTools(this, params.cursor as string | undefined) });
    }
    if (method === "logging/setLevel") {
      const level = params.level as McpLevel;
      if (!onlyKeys(params, ["level"]) || !MCP_LEVELS.includes(level)) return null;
      return () => (this.hub.setLevel(this, level), {});
    }
    // A method no handler of the SDK's Server serves (resources/list, say) is the SDK's -32601 (sdk-server.ts's fallback).
    if (!SDK_METHODS.includes(method)) {
      return () => {
        throw Object.assign(new Error("Method not found"), { code: METHOD_NOT_FOUND });
      };
    }
    if (method !== "initialize" || this.sdkServer) return null;
    const client = initializeParams(params);
    if (!client) return null;
    this.init = { params, ...client };
    const requested = params.protocolVersion as string;
    const { serverInfo, capabilities, instructions } = this.hub.serverInfo();
    return () => ({ protocolVersion: PROTOCOL_VERSIONS.includes(requested) ? requested : PROTOCOL_VERSIONS[0], capabilities, serverInfo, ...(instructions ? { instructions } : {}) });
  }

  /** The SDK's Server for this connection, connected (and told the client's `initialize`) the first time it is needed. */
  private sdk(reason?: unknown): Promise<Server> {
    if (!this.sdkServer) this.note(`loading the MCP SDK's server for ${why(reason)}`);
    return (this.sdkServer ??= this.connectSdk());
  }

  private async connectSdk(): Promise<Server> {
    const { sdkServer } = await import("./sdk-server.ts");
    const server = sdkServer(this.hub, { authenticated: true, owner: this });
    await server.connect(this.link);
    this.transport.onmessage = (message) => this.link.onmessage?.(message);
    if (this.init) {
      const answered = new Promise<void>((resolve) => (this.link.replayed = resolve));
      this.link.onmessage?.({ jsonrpc: "2.0", id: REPLAYED, method: "initialize", params: this.init.params } as JSONRPCMessage);
      await answered;
    }
    if (this.initializedSeen) this.link.onmessage?.({ jsonrpc: "2.0", method: "notifications/initialized" });
    this.server = server;
    return server;
  }

  getClientCapabilities(): ClientCapabilities | undefined {
    return this.server?.getClientCapabilities() ?? this.init?.capabilities;
  }

  getClientVersion(): Implementation | undefined {
    return this.server?.getClientVersion() ?? this.init?.clientInfo;
  }

  async sendToolListChanged(): Promise<void> {
    await this.transport.send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  }

  async sendLoggingMessage(params: LoggingMessageNotification["params"]): Promise<void> {
    await this.transport.send({ jsonrpc: "2.0", method: "notifications/message", params });
  }

  readonly elicitInput: Server["elicitInput"] = (params, options) => this.sdk().then((s) => s.elicitInput(params, options));

  async close(): Promise<void> {
    await this.transport.close();
  }
}

/** What made the SDK's server load, in a few words. */
function why(message: unknown): string {
  if (message === undefined) return "a request to the client";
  const method = isPlainObject(message) ? message.method : undefined;
  if (typeof method === "string" && /^[\w/.-]{1,64}$/.test(method)) return method;
  return isPlainObject(message) && ("result" in message || "error" in message) ? "an answer from the client" : "a message it checks";
}

/** The SDK Server's side of the stdio transport: it answers through it, but its answer to the replayed `initialize` is dropped. */
class SdkLink implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  replayed?: () => void;

  constructor(private readonly transport: StdioTransport) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if ("id" in message && message.id === REPLAYED) return this.replayed?.();
    await this.transport.send(message);
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}

/**
 * The client of a plainly well-formed `initialize`: its capabilities as the SDK reads them (an
 * empty `elicitation` means forms), or null when anything in it is out of the ordinary.
 */
export function initializeParams(params: Record<string, unknown>): { capabilities: ClientCapabilities; clientInfo: Implementation } | null {
  const { protocolVersion, capabilities, clientInfo } = params;
  if (!onlyKeys(params, ["protocolVersion", "capabilities", "clientInfo"]) || typeof protocolVersion !== "string") return null;
  if (!isPlainObject(capabilities) || !isPlainObject(clientInfo) || !onlyKeys(clientInfo, ["name", "version", "title"])) return null;
  if (typeof clientInfo.name !== "string" || typeof clientInfo.version !== "string" || (clientInfo.title !== undefined && typeof clientInfo.title !== "string")) return null;
  for (const [key, value] of Object.entries(capabilities)) {
    if (!isPlainObject(value) || !plainCapability(key, value)) return null;
  }
  const elicitation = capabilities.elicitation;
  const read = isPlainObject(elicitation) && Object.keys(elicitation).length === 0 ? { ...capabilities, elicitation: { form: {} } } : capabilities;
  return { capabilities: read as ClientCapabilities, clientInfo: clientInfo as unknown as Implementation };
}

function plainCapability(key: string, value: Record<string, unknown>): boolean {
  const optional = (v: unknown, type: "boolean" | "object") => v === undefined || (type === "object" ? isPlainObject(v) : typeof v === type);
  switch (key) {
    case "roots":
      return onlyKeys(value, ["listChanged"]) && optional(value.listChanged, "boolean");
    case "sampling":
      return onlyKeys(value, ["context", "tools"]) && optional(value.context, "object") && optional(value.tools, "object");
    case "elicitation": {
      const form = value.form;
      if (!onlyKeys(value, ["form", "url"]) || !optional(form, "object") || !optional(value.url, "object")) return false;
      return form === undefined || (onlyKeys(form as Record<string, unknown>, ["applyDefaults"]) && optional((form as Record<string, unknown>).applyDefaults, "boolean"));
    }
    case "experimental":
    case "extensions":
      return Object.values(value).every(isPlainObject);
    default:
      return false; // tasks, and whatever a newer client declares: the SDK reads those
  }
}
