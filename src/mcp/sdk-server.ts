/**
 * The MCP SDK's low-level `Server` for one connection (every HTTP session; over stdio, what the
 * front of stdio-front.ts leaves to it): its handlers are the hub's. Loaded only when a connection
 * needs it, since the SDK's schemas and its JSON Schema validator cost start-up time and memory.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { type CallToolRequest, GetPromptRequestSchema, ListPromptsRequestSchema, ListToolsRequestSchema, SetLevelRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { callParamsProblem } from "./call-params.ts";
import { INVALID_PARAMS, METHOD_NOT_FOUND, type McpHub, type Peer } from "./hub.ts";
import { getPrompt, listedPrompts } from "./prompts.ts";

/**
 * A new MCP server for one connection of `hub`. `authenticated`: the client proved it is the user
 * (see McpHub.connected). `owner`: the connection the hub knows, when this server serves only part
 * of it (stdio-front.ts); the server itself otherwise.
 */
export function sdkServer(hub: McpHub, { authenticated, owner }: { authenticated: boolean; owner?: Peer }): Server {
  const { serverInfo, capabilities, instructions } = hub.serverInfo();
  const server = new Server(serverInfo, { capabilities, ...(instructions ? { instructions } : {}) });
  const peer = owner ?? server;
  if (hub.hasPrompts()) {
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: listedPrompts(hub.served()) }));
    server.setRequestHandler(GetPromptRequestSchema, (request, extra) => getPrompt(hub.served(), request.params.name, request.params.arguments, extra.signal));
  }
  server.setRequestHandler(ListToolsRequestSchema, async (request) => hub.listTools(peer, request.params?.cursor));
  // tools/call through the fallback handler, so that its params are ours to check: the SDK's
  // check answers a malformed call with -32603 and a schema dump; ours, -32602 and a sentence.
  server.fallbackRequestHandler = async (request, extra) => {
    if (request.method !== "tools/call") throw Object.assign(new Error("Method not found"), { code: METHOD_NOT_FOUND });
    const problem = callParamsProblem(request.params);
    if (problem) throw Object.assign(new Error(problem), { code: INVALID_PARAMS });
    return hub.callTool(peer, request.params as CallToolRequest["params"], extra, authenticated);
  };
  // Our own level per connection, applied to every log we forward (the SDK's applies to some).
  server.removeRequestHandler("logging/setLevel");
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    hub.setLevel(peer, request.params.level);
    return {};
  });
  hub.connected(peer, authenticated);
  server.oninitialized = () => hub.initialized(peer);
  server.onclose = () => hub.closed(peer);
  return server;
}
