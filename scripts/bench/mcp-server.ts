/**
 * The peer: the same tools served by an MCP stdio server (@modelcontextprotocol/sdk, under Bun),
 * calling the same plugin library through bun:ffi.
 * Usage: bun mcp-server.ts <library> <tool>...
 */
import { CString, dlopen, FFIType, type Pointer } from "bun:ffi";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const lib = dlopen(process.argv[2]!, {
  cxagent_plugin_invoke: { args: [FFIType.cstring, FFIType.cstring], returns: FFIType.ptr },
  cxagent_plugin_free: { args: [FFIType.ptr], returns: FFIType.void },
});
const server = new McpServer({ name: "bench", version: "1.0.0" });
const inputSchema = { i: z.number().optional(), bytes: z.number().optional(), data: z.string().optional() };
for (const tool of process.argv.slice(3)) {
  server.registerTool(tool, { description: tool, inputSchema }, async (args) => {
    const p = lib.symbols.cxagent_plugin_invoke(tool, JSON.stringify(args)) as Pointer;
    const envelope = JSON.parse(String(new CString(p)));
    lib.symbols.cxagent_plugin_free(p);
    return { content: [{ type: "text", text: envelope.result.output.content }] };
  });
}
// The SDK caps a message at 10 MiB by default; both ends allow what cxagent allows (64 MiB).
await server.connect(new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: 64 << 20 }));
process.stdin.on("end", () => process.exit(0));
