import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import pkg from "../../../package.json" with { type: "json" };
import { CxError } from "../../errors.ts";
import { globalOptions, repeatedValues } from "../_args.ts";
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
    token: {
      type: "boolean",
      description: "Over HTTP, require 'Authorization: Bearer <token>' (the default): the token is $CXAGENT_MCP_TOKEN, else --token-file's, else a random one printed once at start; --no-token turns it off",
      negativeDescription:
        "Serve loopback HTTP without a token, for clients that cannot send one (the MCP conformance suite). This gives up knowing who calls: any process of any user on this machine can then run your served tools and answer their permission questions once; such clients are never offered Allow always, and the session limit then refuses new sessions instead of closing old ones",
    },
    "token-file": { type: "string", description: "Read the HTTP bearer token from this file (yours, mode 0600 or stricter)", valueHint: "FILE" },
    timeout: { type: "string", description: "Abandon a call after this many milliseconds (a tool error)", valueHint: "MS" },
    "max-body": { type: "string", description: "Over HTTP, refuse a request body over this many bytes with 413 (default 67108864, 64 MiB: the plugin protocol's line cap)", valueHint: "BYTES" },
    "sse-poll-ms": {
      type: "string",
      description: "Over HTTP, close the event stream of a call still running after this many milliseconds; the client reconnects with Last-Event-ID and gets the rest, the result included (SSE polling; default: never)",
      valueHint: "MS",
    },
    "idle-ms": { type: "string", description: "Stop a plugin host after this many milliseconds without a call (default 600000; config.json's idleMs or keepAlive per plugin wins); its next call starts it again", valueHint: "MS" },
  },
  async run({ args, rawArgs }): Promise<CommandResult> {
    const options = globalOptions(args);
    // Loaded only here: no other command pays for the MCP SDK.
    const { parseAllowRule } = await import("../../mcp/permission.ts");
    // The HTTP module (the SDK's HTTP transport) only for --http: stdio serves without the SDK.
    const parseListen = typeof args.http === "string" ? (await import("../../mcp/http.ts")).parseListen : null;
    const { serveMcp } = await import("../../mcp/serve.ts");
    const allowRemote = args["allow-remote"] === true;
    if (allowRemote && typeof args.http !== "string") throw new CxError("E_USAGE", "--allow-remote only applies to --http");
    const noToken = args.token === false;
    if (rawArgs.some((a) => a === "--token" || a === "--no-token") && typeof args.http !== "string") throw new CxError("E_USAGE", `${noToken ? "--no-token" : "--token"} only applies to --http`);
    if (typeof args["token-file"] === "string" && (typeof args.http !== "string" || noToken)) {
      throw new CxError("E_USAGE", noToken ? "--token-file and --no-token contradict each other" : "--token-file only applies to --http");
    }
    if (args["max-body"] !== undefined && typeof args.http !== "string") throw new CxError("E_USAGE", "--max-body only applies to --http");
    if (args["sse-poll-ms"] !== undefined && typeof args.http !== "string") throw new CxError("E_USAGE", "--sse-poll-ms only applies to --http");
    if (noToken && allowRemote) throw new CxError("E_USAGE", "--no-token cannot be used with --allow-remote: off loopback a bearer token is always required");
    const exitCode = await serveMcp({
      plugins: args._.map(String),
      rules: repeatedValues(rawArgs, "--allow-tool").map(parseAllowRule),
      http: typeof args.http === "string" && parseListen ? parseListen(args.http, allowRemote) : null,
      token: !noToken,
      tokenFile: typeof args["token-file"] === "string" ? args["token-file"] : undefined,
      timeoutMs: parseTimeout(args.timeout),
      idleMs: parseTimeout(args["idle-ms"], "--idle-ms"),
      bodyCap: parseBodyCap(args["max-body"]),
      pollMs: parseTimeout(args["sse-poll-ms"], "--sse-poll-ms"),
      cwd: options.cwd,
      configDir: options.configDir,
      stateDir: options.stateDir,
      verbose: options.verbose,
      version: pkg.version,
    });
    return { json: undefined, exitCode };
  },
});

function parseTimeout(value: unknown, flag = "--timeout"): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n > 2_147_483_647) throw new CxError("E_USAGE", `${flag} takes a positive number of milliseconds, not '${String(value)}'`);
  return n;
}

/** --max-body: a whole number of bytes, at least 1 KiB (an initialize request fits) and at most 1 GiB. */
function parseBodyCap(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1024 || n > 1 << 30) throw new CxError("E_USAGE", `--max-body takes a number of bytes from 1024 to 1073741824, not '${String(value)}'`);
  return n;
}
