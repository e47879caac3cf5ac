/**
 * The served plugins, shared by every MCP connection (one over stdio; one per HTTP session). A
 * connection is a `Peer`: an SDK low-level `Server` (sdk-server.ts, so `inputSchema` passes through
 * verbatim), or over stdio the front of our own that serves the common requests without loading the
 * SDK (stdio-front.ts). The handlers call the library's public API and nothing deeper. Nothing here
 * loads the SDK: its types are only types.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolRequest, ClientCapabilities, Implementation, LoggingMessageNotification, ServerCapabilities, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { type CallEvent, composeInstructions, CxError, isCxError, type PluginChange, type Session } from "../index.ts";
import { toolsPage } from "./call-params.ts";
import { LazyPlugin, type Served } from "./lazy.ts";
import { askToApprove } from "./approval.ts";
import { type AllowRule, permissionFor, policyHint } from "./permission.ts";
import { deliveryOptions, READ_RESULT_TOOL, readResultCall, ResultToolListing, withSpill } from "./results.ts";
import { callResult, failedCall, hasOutputSchema, isAtLeast, type ListedTool, listedTool, mcpLevel, type McpLevel, ProgressCounter, visible } from "./tools.ts";

/** JSON-RPC's codes for an unknown method and for bad params (the SDK's ErrorCode, whose module loads its schemas). */
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;

/** One MCP connection as the hub uses it: an SDK `Server` is one as it is. */
export interface Peer {
  getClientCapabilities(): ClientCapabilities | undefined;
  getClientVersion(): Implementation | undefined;
  sendToolListChanged(): Promise<void>;
  sendLoggingMessage(params: LoggingMessageNotification["params"]): Promise<void>;
  elicitInput: Server["elicitInput"];
  close(): Promise<void>;
}

/** How long a person may take to answer a permission question. */
const ELICIT_MS = 10 * 60_000;
/** Plugin logs below this reach a client that never sent logging/setLevel only on stderr. */
const DEFAULT_LEVEL: McpLevel = "info";

export interface HubOptions {
  session: Session;
  plugins: Served[];
  rules: AllowRule[];
  version: string;
  /** Milliseconds before a call is abandoned with E_TIMEOUT (none by default). */
  timeoutMs?: number;
  /** One diagnostic line for stderr (said with --verbose only). */
  note: (line: string) => void;
  /** One warning for stderr (always said). */
  warn: (line: string) => void;
  /** A log report of a plugin, for stderr (level per SPEC §3.3). */
  logToStderr: (plugin: string, level: number, text: string) => void;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
/** What a call needs of its request's context: the SDK's `extra`, or the stdio fast path's (fast-call.ts). */
export type CallExtra = Pick<Extra, "signal" | "sendNotification" | "sendRequest">;

export class McpHub {
  /** Connections whose client finished initializing: they may be sent notifications. */
  private readonly ready = new Set<Peer>();
  private readonly levels = new WeakMap<Peer, McpLevel>();
  private readonly quarantined = new Map<string, CxError>();
  /** Connections cxagent knows are the user's own (stdio; HTTP with the token): only they may approve. */
  private readonly authenticated = new WeakSet<Peer>();
  /** The changed files each plugin's approval was last asked for (its hash): asked once. */
  private readonly asked = new Map<string, string>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly resultTool = new ResultToolListing();

  constructor(private readonly options: HubOptions) {
    for (const plugin of options.plugins) {
      plugin.onChange((change) => this.pluginChanged(plugin, change));
      if (plugin instanceof LazyPlugin) plugin.onListChanged(() => this.toolsChanged(plugin));
      if (!plugin.manifest.client) continue;
      // No MCP message starts work in the client (sampling asks its model for text, which is not
      // the same), so what a client plugin submits is said on stderr and dropped.
      options.warn(`plugin '${plugin.name}' can start work on its own (client: true); MCP cannot pass that on, so what it submits is logged here and dropped`);
      plugin.onSubmit((submit) => options.warn(`plugin '${plugin.name}' submitted work, dropped: ${visible(submit.goal.slice(0, 200))}`));
    }
  }

  get plugins(): readonly Served[] {
    return this.options.plugins;
  }

  /** The tools served now: every tool the library shows (none hidden) of every plugin that is not quarantined. */
  tools(): ListedTool[] {
    return [...this.options.plugins.filter((p) => !this.quarantined.has(p.name)).flatMap((p) => p.tools.map((t) => listedTool(p.manifest, t))), ...this.resultTool.tools()];
  }

  /** What `initialize` answers of the server: its name and version, capabilities and instructions (the served plugins', a lazy one's from its sidecar). */
  serverInfo(): { serverInfo: Implementation; capabilities: ServerCapabilities; instructions?: string } {
    const instructions = composeInstructions(this.options.plugins);
    return {
      serverInfo: { name: "cxagent", version: this.options.version },
      capabilities: { tools: { listChanged: true }, logging: {}, ...(this.hasPrompts() ? { prompts: {} } : {}) },
      ...(instructions ? { instructions } : {}),
    };
  }

  /** The plugins whose tools and prompts are served now (none quarantined). */
  served(): Served[] {
    return this.options.plugins.filter((p) => !this.quarantined.has(p.name));
  }

  /**
   * A new connection. `authenticated`: the client proved it is the user (our parent over stdio,
   * the bearer token over HTTP); one that did not is never offered Allow always, so it cannot
   * store a grant that would answer the user's own later calls.
   */
  connected(peer: Peer, authenticated: boolean) {
    if (authenticated) this.authenticated.add(peer);
  }

  /** The client finished initializing: it may be sent notifications. */
  initialized(peer: Peer) {
    this.ready.add(peer);
  }

  closed(peer: Peer) {
    this.ready.delete(peer);
  }

  /** `logging/setLevel`: our own level per connection, applied to every log we forward (the SDK's applies to some). */
  setLevel(peer: Peer, level: McpLevel) {
    this.levels.set(peer, level);
  }

  /** A `tools/list` page; a cursor this server did not give throws (-32602). */
  listTools(peer: Peer, cursor: string | undefined): { tools: ListedTool[]; nextCursor?: string } {
    const page = toolsPage(this.tools(), cursor);
    // What `npm run agents:check` looks for: proof that an agent CLI listed our tools.
    this.options.note(`tools/list from ${clientLabel(peer.getClientVersion()?.name)}: ${page.tools.length} tools`);
    return page;
  }

  /** Whether any served plugin has commands: they are served as prompts. */
  hasPrompts(): boolean {
    return this.options.plugins.some((p) => p.manifest.commands.length > 0);
  }

  /** A plugin's log outside any call: stderr, and each client that wants that level. */
  log(plugin: string, level: number, text: string) {
    this.options.logToStderr(plugin, level, text);
    const mapped = mcpLevel(level);
    for (const server of this.ready) {
      if (!isAtLeast(mapped, this.levels.get(server) ?? DEFAULT_LEVEL)) continue;
      server.sendLoggingMessage({ level: mapped, logger: plugin, data: text }).catch(() => {});
    }
  }

  /** Resolves once no call is running, or after `ms` (a client that closed stdin still reads). */
  async drain(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.inFlight.size > 0 && Date.now() < deadline) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => (timer = setTimeout(r, deadline - Date.now())))]);
      clearTimeout(timer);
    }
  }

  async close() {
    await Promise.all([...this.ready].map((s) => s.close().catch(() => {})));
    this.ready.clear();
  }

  /** A served plugin's files changed on disk (its tools leave the list), or its new bytes were approved (they come back). */
  private toolsChanged(plugin: Served) {
    const listed = plugin.tools.length > 0 || plugin.manifest.tools.length === 0;
    this.options.warn(listed ? `plugin '${plugin.name}' changed and its new files are approved: its tools are listed again` : `plugin '${plugin.name}' changed on disk: its tools are not listed until its new files are approved (cxagent approve)`);
    for (const server of this.ready) server.sendToolListChanged().catch(() => {});
    if (!listed && plugin instanceof LazyPlugin) void this.askToApprove(plugin);
  }

  /** Asks the user's own client (one that can show a form) to approve the changed files; once per hash. */
  private async askToApprove(plugin: LazyPlugin) {
    const pending = plugin.awaitingApproval;
    if (!pending || this.asked.get(plugin.name) === pending.hash) return;
    const server = [...this.ready].find((s) => this.authenticated.has(s) && s.getClientCapabilities()?.elicitation?.form !== undefined);
    if (!server) return;
    this.asked.set(plugin.name, pending.hash);
    try {
      if (!(await askToApprove(server, pending))) return void this.options.warn(`plugin '${plugin.name}': its new files were not approved by the client; cxagent approve ${pending.folder} still can`);
      await plugin.approvePending(pending.hash);
      this.options.warn(`plugin '${plugin.name}': its new files (hash ${pending.hash}) were approved through the client`);
    } catch (error) {
      this.options.warn(`plugin '${plugin.name}': approving its new files through the client failed: ${(error as Error).message}`);
    }
  }

  private pluginChanged(plugin: Served, change: PluginChange) {
    if (change.kind === "quarantined") {
      this.quarantined.set(plugin.name, change.error);
      this.options.warn(`plugin '${plugin.name}' is quarantined; its tools are no longer listed`);
    } else {
      this.options.note(`plugin '${plugin.name}' has a new plugin host`);
    }
    for (const server of this.ready) server.sendToolListChanged().catch(() => {});
  }

  /** A `tools/call`, counted among the calls in flight (drain waits for them). */
  callTool(server: Peer, params: CallToolRequest["params"], extra: CallExtra, authenticated: boolean) {
    const call = this.call(server, params, extra, authenticated);
    const settled = call.then(
      () => {},
      () => {},
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return call;
  }

  private async call(server: Peer, params: CallToolRequest["params"], extra: CallExtra, authenticated: boolean) {
    const { name } = params;
    if (name === READ_RESULT_TOOL) return readResultCall(this.options.session, params.arguments, params._meta);
    // Found among every tool the plugins declare, hidden ones included, so that a call to a hidden
    // tool is refused by the library (E_TOOL_HIDDEN, naming the rule), as everywhere else.
    const plugin = this.options.plugins.find((p) => p.tools.some((t) => t.name === name)) ?? this.options.plugins.find((p) => p.manifest.tools.some((t) => t.name === name));
    if (!plugin) {
      const known = this.tools().map((t) => t.name);
      const list = known.length > 20 ? `${known.slice(0, 20).join(", ")}, …` : known.join(", ") || "none";
      // Not McpError: its message starts "MCP error -32602: ", which the SDK sends as the message,
      // and a client's McpError prefixes again ("MCP error -32602: MCP error -32602: …").
      throw Object.assign(new Error(`Unknown tool '${name}'; the tools served are: ${list}`), { code: INVALID_PARAMS });
    }
    const quarantine = this.quarantined.get(plugin.name);
    if (quarantine) return failedCall(plugin.name, quarantine);

    const token = params._meta?.progressToken;
    const sent: Promise<unknown>[] = [];
    const counter = new ProgressCounter();
    const notify = (notification: ServerNotification) => sent.push(extra.sendNotification(notification).catch(() => {}));
    const onEvent = (event: CallEvent) => {
      if (event.event === "log") {
        this.options.logToStderr(plugin.name, event.level, event.text);
        const level = mcpLevel(event.level);
        if (isAtLeast(level, this.levels.get(server) ?? DEFAULT_LEVEL)) notify({ method: "notifications/message", params: { level, logger: plugin.name, data: event.text } });
        return;
      }
      if (token === undefined) return;
      const progress = counter.next(event.event === "progress" ? event.percent : null);
      if (progress === null) return;
      notify({ method: "notifications/progress", params: { progressToken: token, progress, total: 100, ...(event.text ? { message: event.text } : {}) } });
    };
    const permission = permissionFor({
      plugin: plugin.name,
      tool: name,
      rules: this.options.rules,
      canElicit: server.getClientCapabilities()?.elicitation?.form !== undefined,
      // The answer's schema is the SDK's, loaded only when a person is asked.
      elicit: async (params) => extra.sendRequest({ method: "elicitation/create", params }, (await import("@modelcontextprotocol/sdk/types.js")).ElicitResultSchema, { signal: extra.signal, timeout: ELICIT_MS }),
      project: this.options.session.cwd,
      note: this.options.note,
      signal: extra.signal,
      mayStore: authenticated,
    });
    try {
      const result = await plugin.invoke(name, params.arguments ?? {}, { signal: extra.signal, onEvent, permission, timeoutMs: this.options.timeoutMs, ...deliveryOptions(params._meta) });
      await Promise.all(sent);
      this.resultTool.saw(result, () => this.ready.forEach((s) => s.sendToolListChanged().catch(() => {})));
      const declared = plugin.manifest.tools.find((t) => t.name === name);
      return withSpill(callResult(plugin.name, name, result, result.decidedBy === "policy" ? policyHint(plugin.name, name) : undefined, hasOutputSchema(declared), plugin.sandboxLayers), result);
    } catch (error) {
      await Promise.all(sent);
      if (extra.signal.aborted) {
        // The SDK sends nothing for a cancelled request; the native call may still finish.
        this.options.note(`${plugin.name} ${name}: cancelled by the client; the call was abandoned (the plugin may still finish it)`);
        throw error;
      }
      if (!isCxError(error)) throw error;
      this.options.note(`${plugin.name} ${name}: ${error.code}: ${error.message}`);
      return failedCall(plugin.name, error);
    }
  }
}

/** A client's name as the client sent it, for a diagnostic line: only when it is plain text. */
export function clientLabel(name: unknown): string {
  return typeof name === "string" && /^[\w .@/+-]{1,64}$/.test(name) ? name : "a client";
}
