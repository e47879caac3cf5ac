import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import pkg from "../../../package.json" with { type: "json" };
import { CxError } from "../../errors.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: commandMeta({
    name: "mcp",
    description: "Serve plugins to an MCP client (stdio, or Streamable HTTP with --http); never prompts",
    summary: "Serve plugins to an MCP client (Claude Code, Codex, Cursor, …) over stdio or HTTP",
  }),
  args: {
    plugins: { type: "positional", description: "Plugins to serve (default: every enabled, approved plugin)", required: false },
    "allow-tool": {
      type: "string",
      description: "Allow calls that need permission without asking: <plugin>/<tool> or 'plugin <plugin> tool <tool>', * as a wildcard; repeatable",
      valueHint: "RULE",
    },
    http: { type: "string", description: "Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only)", valueHint: "HOST:PORT" },
    "allow-remote": { type: "boolean", description: "Let --http listen on a non-loopback address (a bearer token is then required)" },
    token: { type: "boolean", description: "Require 'Authorization: Bearer <token>' over HTTP ($CXAGENT_MCP_TOKEN, else a random one printed at start)" },
    timeout: { type: "string", description: "Abandon a call after this many milliseconds (a tool error)", valueHint: "MS" },
  },
  async run({ args, rawArgs }): Promise<CommandResult> {
    const options = globalOptions(args);
    // Loaded only here: no other command pays for the MCP SDK.
    const { parseAllowRule } = await import("../../mcp/permission.ts");
    const { parseListen } = await import("../../mcp/http.ts");
    const { serveMcp } = await import("../../mcp/serve.ts");
    const allowRemote = args["allow-remote"] === true;
    if (allowRemote && typeof args.http !== "string") throw new CxError("E_USAGE", "--allow-remote only applies to --http");
    if (args.token === true && typeof args.http !== "string") throw new CxError("E_USAGE", "--token only applies to --http");
    const exitCode = await serveMcp({
      plugins: args._.map(String),
      rules: valuesOf(rawArgs, "--allow-tool").map(parseAllowRule),
      http: typeof args.http === "string" ? parseListen(args.http, allowRemote) : null,
      token: args.token === true,
      timeoutMs: parseTimeout(args.timeout),
      cwd: options.cwd,
      configDir: options.configDir,
      stateDir: options.stateDir,
      verbose: options.verbose,
      version: pkg.version,
    });
    return { json: undefined, exitCode };
  },
});

/** Every value of a repeatable flag, as `--flag V` or `--flag=V`. */
function valuesOf(rawArgs: string[], flag: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const token = rawArgs[i]!;
    if (token === "--") break;
    if (token === flag && i + 1 < rawArgs.length) values.push(rawArgs[++i]!);
    else if (token.startsWith(`${flag}=`)) values.push(token.slice(flag.length + 1));
  }
  return values;
}

function parseTimeout(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CxError("E_USAGE", `--timeout takes a positive number of milliseconds, not '${String(value)}'`);
  return n;
}
