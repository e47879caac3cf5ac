/**
 * The two-process floor of `cxagent mcp`'s speed targets (issue 42 point 1): a server that, as
 * cxagent must, runs the tool in a process of its own, and otherwise does nothing. It passes the
 * client's bytes to a child running mcp-floor.mjs and the child's bytes back, without reading
 * them: no parsing, no check, no frame kept whole. What it costs over mcp-floor.mjs is the second
 * hop alone.
 * Usage: node|bun mcp-relay.mjs
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const floor = fileURLToPath(new URL("./mcp-floor.mjs", import.meta.url));
const child = spawn(process.execPath, [floor], { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.on("data", (chunk) => child.stdin.write(chunk));
child.stdout.on("data", (chunk) => process.stdout.write(chunk));
process.stdin.on("end", () => child.stdin.end());
child.on("exit", () => process.exit(0));
