/**
 * The hand-written MCP server `cxagent mcp` is measured against (issue 42 point 1): the official
 * SDK's McpServer over stdio doing the calculator's multiplication in JS. Plain JavaScript, so
 * Node and Bun both run it as it is.
 * Usage: node|bun mcp-minimal.mjs
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "minimal", version: "1.0.0" });
server.registerTool("calc_multiply", { description: "Multiply two numbers", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
  content: [{ type: "text", text: `${a} * ${b} = ${a * b}` }],
}));
await server.connect(new StdioServerTransport());
process.stdin.on("end", () => process.exit(0));
