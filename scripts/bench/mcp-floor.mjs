/**
 * The floor of `cxagent mcp`'s speed targets (issue 42 point 1): an MCP stdio server that does
 * nothing a server should. No SDK, no schema, no check of what it reads: it splits stdin into
 * lines, parses each and answers `initialize`, `tools/list` and the multiplication of `tools/call`
 * with the least JSON the SDK's Client accepts. No server that checks its input can be faster, and
 * one that runs the tool in a process of its own (as cxagent must) has a second hop besides.
 * Plain JavaScript, so Node and Bun both run it as it is.
 * Usage: node|bun mcp-floor.mjs
 */
const TOOL = { name: "calc_multiply", description: "Multiply two numbers", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } };

function answer(message) {
  switch (message.method) {
    case "initialize":
      return { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "floor", version: "1.0.0" } };
    case "tools/list":
      return { tools: [TOOL] };
    case "tools/call": {
      const { a, b } = message.params.arguments;
      return { content: [{ type: "text", text: `${a} * ${b} = ${a * b}` }] };
    }
    default:
      return {};
  }
}

let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  const lines = (pending + chunk).split("\n");
  pending = lines.pop();
  let out = "";
  for (const line of lines) {
    if (!line) continue;
    const message = JSON.parse(line);
    if (message.id !== undefined) out += `${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: answer(message) })}\n`;
  }
  if (out) process.stdout.write(out);
});
process.stdin.on("end", () => process.exit(0));
