/**
 * The peer: the same tool served by an MCP stdio server (@modelcontextprotocol/sdk, under Bun),
 * calling the same plugin library through bun:ffi.
 * Usage: bun mcp-server.ts <library>
 */
import { CString, dlopen, FFIType, type Pointer } from "bun:ffi";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const lib = dlopen(process.argv[2]!, {
  cxagent_plugin_invoke: { args: [FFIType.cstring, FFIType.cstring], returns: FFIType.ptr },
  cxagent_plugin_free: { args: [FFIType.ptr], returns: FFIType.void },
});
const server = new McpServer({ name: "noop", version: "1.0.0" });
server.registerTool("noop", { description: "does nothing", inputSchema: { i: z.number().optional() } }, async (args) => {
  const p = lib.symbols.cxagent_plugin_invoke("noop", JSON.stringify(args)) as Pointer;
  const envelope = JSON.parse(String(new CString(p)));
  lib.symbols.cxagent_plugin_free(p);
  return { content: [{ type: "text", text: envelope.result.output.content }] };
});
await server.connect(new StdioServerTransport());
process.stdin.on("end", () => process.exit(0));
