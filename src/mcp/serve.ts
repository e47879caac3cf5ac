/**
 * `cxagent mcp`: opens a session, loads the plugins to serve (never prompting: stdin belongs to
 * MCP), serves them over stdio or Streamable HTTP, and stops every plugin when the client goes
 * away — stdin's end, EPIPE on stdout, SIGHUP, SIGTERM, SIGINT, or the parent's death.
 */
import { createLogger, CxError, isCxError, type Plugin, Session } from "../index.ts";
import { McpHub } from "./hub.ts";
import { bearerToken, type HttpServer, type Listen, serveHttp } from "./http.ts";
import type { AllowRule } from "./permission.ts";
import { StdioTransport } from "./stdio.ts";
import { claimStdout } from "./stdout.ts";

export interface McpOptions {
  /** Plugin references to serve; empty = every enabled plugin that is approved. */
  plugins: string[];
  rules: AllowRule[];
  /** Streamable HTTP instead of stdio. */
  http: Listen | null;
  /** Require a bearer token over HTTP (the default; always, off loopback). */
  token: boolean;
  /** Read the token from this file (when $CXAGENT_MCP_TOKEN is not set). */
  tokenFile?: string;
  timeoutMs?: number;
  cwd: string;
  configDir?: string;
  stateDir?: string;
  verbose: boolean;
  version: string;
}

/** How long calls still running when stdin closes may take to answer before the server stops. */
const DRAIN_MS = 2_000;
const LEVEL_METHODS = ["debug", "debug", "info", "warn", "error", "error"] as const;

export async function serveMcp(options: McpOptions): Promise<number> {
  // Before anything loads: a token file that cannot be used stops the server at once.
  const token = options.http && (options.token || !options.http.loopback) ? bearerToken(process.env, options.tokenFile) : null;
  const writeFrame = options.http ? null : claimStdout();
  const logger = createLogger({ verbose: options.verbose });
  const note = (line: string) => logger.withTag("mcp").info(line);
  const logToStderr = (plugin: string, level: number, text: string) => logger.withTag(plugin)[LEVEL_METHODS[level] ?? "info"](text);
  let hub: McpHub | null = null;
  const session = await Session.open({
    cwd: options.cwd,
    configDir: options.configDir,
    stateDir: options.stateDir,
    source: "mcp",
    logger,
    confirmTrust: null,
    onOutput: (plugin, line) => logger.withTag(plugin).log(line),
    onLog: (plugin, level, text) => (hub ? hub.log(plugin, level, text) : logToStderr(plugin, level, text)),
  });
  let http: HttpServer | null = null;
  const stopping = new AbortController();
  const cleanups: (() => void)[] = [];
  const stop = (why: string) => {
    if (!stopping.signal.aborted) stopping.abort(why);
  };
  const stopped = new Promise<string>((resolve) => stopping.signal.addEventListener("abort", () => resolve(String(stopping.signal.reason)), { once: true }));
  for (const signal of ["SIGTERM", "SIGHUP", "SIGINT"] as const) {
    const onSignal = () => stop(signal);
    process.on(signal, onSignal);
    cleanups.push(() => process.off(signal, onSignal));
  }
  try {
    const plugins = await loadServed(session, options.plugins, note);
    hub = new McpHub({ session, plugins, rules: options.rules, version: options.version, timeoutMs: options.timeoutMs, note, logToStderr });
    for (const rule of options.rules) {
      if (!plugins.some((p) => p.tools.some((t) => rule.matches(p.name, t.name)))) note(`--allow-tool ${rule.text} matches no served tool`);
    }
    if (plugins.length === 0 && options.plugins.length === 0) {
      // Serving nothing is allowed (plugins may be approved later), but never without saying where it looked.
      note(`no enabled, approved plugin to serve; looked in ${session.searchFolders.map((f) => f.path).join(", ")} and config.json (see cxagent list)`);
    }
    const tools = hub.tools().length;
    const served = `${plugins.length} plugin${plugins.length === 1 ? "" : "s"} (${tools} tool${tools === 1 ? "" : "s"})${plugins.length ? `: ${plugins.map((p) => p.name).join(", ")}` : ""}`;
    if (options.http) {
      http = serveHttp(hub, options.http, token?.token ?? null);
      // The token first: whoever waits for the address line has the token line by then.
      if (token?.source === "env") note("clients must send 'Authorization: Bearer <the token in CXAGENT_MCP_TOKEN>'");
      else if (token?.source === "file") note(`clients must send 'Authorization: Bearer <the token in ${options.tokenFile}>'`);
      else if (token) note(`clients must send 'Authorization: Bearer ${token.token}'`);
      else note("--no-token: any local process, of any user, can call the served tools; such clients are never offered Allow always");
      note(`serving over Streamable HTTP at ${http.url}: ${served}`);
    } else {
      const transport = new StdioTransport(process.stdin, writeFrame!);
      transport.onend = stop;
      transport.onclose = () => stop("the connection closed");
      const onStdoutError = (error: NodeJS.ErrnoException) => stop(error.code === "EPIPE" ? "stdout closed (EPIPE)" : `stdout failed: ${error.message}`);
      process.stdout.on("error", onStdoutError);
      cleanups.push(() => process.stdout.off("error", onStdoutError));
      // The client is our parent: when it dies without closing our stdin, we go too.
      const parent = process.ppid;
      const watchdog = setInterval(() => process.ppid !== parent && stop("the parent process ended"), 500);
      watchdog.unref();
      cleanups.push(() => clearInterval(watchdog));
      await hub.server({ authenticated: true }).connect(transport); // our parent started us: it is the user
      cleanups.push(() => process.stdin.pause());
      note(`serving over stdio: ${served}`);
    }
    const why = await stopped;
    note(`stopping: ${why}`);
    // A client that closed its end of stdin may still read the answers to calls it sent.
    if (why.startsWith("stdin")) await hub.drain(DRAIN_MS);
  } finally {
    for (const cleanup of cleanups) cleanup();
    await http?.close();
    await hub?.close();
    await session.close();
  }
  // Nothing should keep the process up now; if something does (a native call that never returns
  // holds no handle, but a stray timer could), leave anyway.
  setTimeout(() => process.exit(0), 1000).unref();
  return 0;
}

/** Loads what to serve; anything that cannot be loaded is skipped with one stderr line. */
async function loadServed(session: Session, refs: string[], note: (line: string) => void): Promise<Plugin[]> {
  const plugins: Plugin[] = [];
  const candidates = refs.length
    ? refs.map((ref) => ({ ref, name: ref, problem: null as string | null }))
    : session.available().filter((p) => p.enabled);
  for (const candidate of candidates) {
    if (candidate.problem) {
      note(`skipped plugin '${candidate.name}': ${candidate.problem}`);
      continue;
    }
    try {
      plugins.push(await session.load(candidate.ref));
    } catch (error) {
      if (!isCxError(error)) throw error;
      if (refs.length && (error.code === "E_NOT_FOUND" || error.code === "E_CONFIG")) throw error;
      note(`skipped plugin '${(error.details?.plugin as string | undefined) ?? candidate.name}': ${skipReason(error, candidate.ref)}`);
    }
  }
  return plugins;
}

function skipReason(error: CxError, ref: string): string {
  if (error.code === "E_NOT_APPROVED") {
    const why = error.details?.state === "changed" ? "its files changed since it was approved" : "it is not approved";
    return `${why}; approve it with: cxagent approve ${ref}`;
  }
  return `${error.message}${error.hint ? ` (${error.hint})` : ""}`;
}
