/**
 * `cxagent mcp`: opens a session, loads the plugins to serve (never prompting: stdin belongs to
 * MCP), serves them over stdio or Streamable HTTP, and stops every plugin when the client goes
 * away — stdin's end, EPIPE on stdout, SIGHUP, SIGTERM, SIGINT, or the parent's death.
 */
import { createLogger, CxError, type Inspection, isCxError, Session, whenParentDies } from "../index.ts";
import { type FSWatcher, watch } from "node:fs";
import { McpHub } from "./hub.ts";
import { DEFAULT_IDLE_MS, LazyPlugin, type Served, servableLazily } from "./lazy.ts";
import type { HttpServer, Listen } from "./http.ts";
import type { AllowRule } from "./permission.ts";
import { StdioTransport } from "./stdio.ts";
import { StdioFront } from "./stdio-front.ts";
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
  /** Over HTTP, the most bytes of a request body (default 64 MiB). */
  bodyCap?: number;
  /** Over HTTP, close a running call's event stream after this long; the client resumes it. */
  pollMs?: number;
  /** Stop a lazily started plugin host after this long without a call (default 10 minutes). */
  idleMs?: number;
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
  // Over HTTP only, the SDK's HTTP transport (stdio serves without it).
  const httpModule = options.http ? await import("./http.ts") : null;
  // Before anything loads: a token file that cannot be used stops the server at once.
  const token = httpModule && options.http && (options.token || !options.http.loopback) ? httpModule.bearerToken(process.env, options.tokenFile) : null;
  const writeFrame = options.http ? null : claimStdout();
  // A client logs our stderr (Claude Code as [ERROR]): warnings and errors only, unless --verbose.
  // Over HTTP a person started the server: it also says where it listens, and what plugins print.
  // Given at creation, so that the logger (consola) loads only when something is said.
  const level = options.verbose ? 4 : options.http ? 2 : 1;
  const logger = createLogger({ level });
  // One tagged logger (each withTag builds a logger: a tools/list's note paid for one).
  const mcpLog = logger.withTag("mcp");
  const note = level >= 3 ? (line: string) => mcpLog.info(line) : () => {};
  const warn = (line: string) => mcpLog.warn(line);
  // Over HTTP the address (and the token) is what a person started the server for: always said.
  const say = (line: string) => mcpLog.log(line);
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
    const plugins = await loadServed(session, options.plugins, warn, options.idleMs ?? DEFAULT_IDLE_MS);
    hub = new McpHub({ session, plugins, rules: options.rules, version: options.version, timeoutMs: options.timeoutMs, note, warn, logToStderr });
    cleanups.push(watchServed(plugins, session.folders.stateDir));
    for (const rule of options.rules) {
      if (!plugins.some((p) => p.tools.some((t) => rule.matches(p.name, t.name)))) warn(`--allow-tool ${rule.text} matches no served tool`);
    }
    if (plugins.length === 0 && options.plugins.length === 0) {
      // Serving nothing is allowed (plugins may be approved later), but never without saying where it looked.
      warn(nothingToServe(session));
    }
    const tools = hub.tools().length;
    const served = `${plugins.length} plugin${plugins.length === 1 ? "" : "s"} (${tools} tool${tools === 1 ? "" : "s"})${plugins.length ? `: ${plugins.map((p) => p.name).join(", ")}` : ""}`;
    if (options.http && httpModule) {
      http = httpModule.serveHttp(hub, options.http, token?.token ?? null, options.bodyCap, options.pollMs);
      // The token first: whoever waits for the address line has the token line by then.
      if (token?.source === "env") say("clients must send 'Authorization: Bearer <the token in CXAGENT_MCP_TOKEN>'");
      else if (token?.source === "file") say(`clients must send 'Authorization: Bearer <the token in ${options.tokenFile}>'`);
      else if (token) say(`clients must send 'Authorization: Bearer ${token.token}'`);
      else warn("--no-token: any local process, of any user, can call the served tools; such clients are never offered Allow always");
      say(`serving over Streamable HTTP at ${http.url}: ${served}`);
    } else {
      const transport = new StdioTransport(process.stdin, writeFrame!);
      transport.onend = stop;
      transport.onclose = () => stop("the connection closed");
      const onStdoutError = (error: NodeJS.ErrnoException) => stop(error.code === "EPIPE" ? "stdout closed (EPIPE)" : `stdout failed: ${error.message}`);
      process.stdout.on("error", onStdoutError);
      cleanups.push(() => process.stdout.off("error", onStdoutError));
      // The client is our parent: when it dies without closing our stdin, we go too (told by the kernel).
      cleanups.push(whenParentDies(() => stop("the parent process ended")));
      // Our own code serves the common requests; the SDK's Server, the rest, loaded when first needed (stdio-front.ts).
      new StdioFront(hub, transport, note);
      await transport.start();
      cleanups.push(() => process.stdin.pause());
      note(`serving over stdio: ${served}`);
      if (process.env.CXAGENT_IDLE_RUNTIME === "1") note(`pid ${process.pid} restarted itself with BUN_GC_TIMER_DISABLE=1${process.env.BUN_JSC_useWarmUpMarkedBlocks === "0" ? " and BUN_JSC_useWarmUpMarkedBlocks=0" : ""}, so that it does no work while idle`);
    }
    const why = await stopped;
    note(`stopping: ${why}`);
    // A client that closed its end of stdin may still read the answers to calls it sent.
    if (why.startsWith("stdin")) await hub.drain(DRAIN_MS);
  } finally {
    for (const cleanup of cleanups) cleanup();
    await http?.close();
    await hub?.close();
    for (const plugin of hub?.plugins ?? []) if (plugin instanceof LazyPlugin) await plugin.close();
    await session.close();
  }
  // Nothing should keep the process up now; if something does (a native call that never returns
  // holds no handle, but a stray timer could), leave anyway.
  setTimeout(() => process.exit(0), 1000).unref();
  return 0;
}

/**
 * Loads what to serve: the references given, else what `cxagent list` shows (every enabled plugin
 * config.json names or discovery finds, then those approved by their path); anything that cannot
 * be loaded is skipped with one stderr line.
 */
async function loadServed(session: Session, refs: string[], warn: (line: string) => void, idleMs: number): Promise<Served[]> {
  const plugins: Served[] = [];
  const candidates = refs.length
    ? refs.map((ref) => ({ ref, name: ref, problem: null as string | null }))
    : [...session.available(), ...session.approvedByPath()].filter((p) => p.enabled);
  for (const candidate of candidates) {
    if (candidate.problem) {
      warn(`skipped plugin '${candidate.name}': ${candidate.problem}`);
      continue;
    }
    try {
      const ref = refs.length ? byApproval(session, candidate.ref) : candidate.ref;
      const lazy = lazyOrNull(session, ref, plugins, idleMs);
      plugins.push(lazy ?? (await session.load(ref)));
    } catch (error) {
      if (!isCxError(error)) throw error;
      if (refs.length && (error.code === "E_NOT_FOUND" || error.code === "E_CONFIG")) throw error;
      warn(`skipped plugin '${(error.details?.plugin as string | undefined) ?? candidate.name}': ${skipReason(error, candidate.ref)}`);
    }
  }
  return plugins;
}

/**
 * A name no search folder or config entry knows, but one plugin approved by its path holds (as
 * `cxagent list` shows it): its folder. Anything else is left as it is, to be resolved (or
 * refused, naming where it looked) by the load.
 */
function byApproval(session: Session, ref: string): string {
  try {
    session.locate(ref);
    return ref;
  } catch (error) {
    if (!isCxError(error) || error.code !== "E_NOT_FOUND") return ref;
  }
  const approved = session.approvedByPath().filter((p) => p.name === ref && p.problem === null);
  if (approved.length === 1) return approved[0]!.ref;
  if (approved.length > 1) {
    throw new CxError("E_NOT_FOUND", `more than one plugin named '${ref}' is approved by its path: ${approved.map((p) => p.ref).join(", ")}`, {
      hint: "serve the one you mean by its path",
    });
  }
  return ref;
}

/**
 * The plugin `ref` names, served without a host until its first call, when its inspection allows
 * that (lazy.ts) and none of its tools is already served; null to load it at once instead (whose
 * refusals, if any, the library words).
 */
function lazyOrNull(session: Session, ref: string, served: readonly Served[], idleMs: number): LazyPlugin | null {
  let inspection: Inspection;
  try {
    inspection = session.inspect(ref);
  } catch (error) {
    if (isCxError(error)) return null;
    throw error;
  }
  if (!servableLazily(inspection)) return null;
  const names = new Set(served.flatMap((p) => p.manifest.tools.map((t) => t.name)));
  if (inspection.manifest.tools.some((t) => names.has(t.name)) || served.some((p) => p.name === inspection.name)) return null;
  const entry = session.config.plugins.get(inspection.name);
  return new LazyPlugin(session, ref, inspection, entry?.keepAlive ? null : (entry?.idleMs ?? idleMs));
}

/**
 * Live reload (issue 42 point 3): each lazily served plugin watches its folder, and an approval
 * (`cxagent approve` in another terminal rewrites approvals.json) makes the changed ones look
 * again. Returns the way to stop watching.
 */
function watchServed(plugins: readonly Served[], stateDir: string): () => void {
  const lazy = plugins.filter((p): p is LazyPlugin => p instanceof LazyPlugin);
  if (lazy.length === 0) return () => {};
  for (const plugin of lazy) plugin.watch();
  let approvals: FSWatcher | null = null;
  try {
    approvals = watch(stateDir, { persistent: false }, (_, file) => {
      if (file === null || String(file).startsWith("approvals.json")) for (const plugin of lazy) plugin.recheckSoon();
    });
  } catch {
    approvals = null; // no state folder yet: an approval made later is seen at the next change
  }
  return () => approvals?.close();
}

/** What a server with nothing to serve says: where it looked, and what to run. */
function nothingToServe(session: Session): string {
  const found = [...session.available(), ...session.approvedByPath()];
  const looked = `looked in ${session.searchFolders.map((f) => f.path).join(", ")}, config.json and the approvals of ${session.folders.stateDir}`;
  if (found.length === 0) return `no plugin to serve; ${looked}. Approve one with 'cxagent approve <plugin folder>' (it is then served by a bare 'cxagent mcp'), then restart the server`;
  return `no enabled, approved plugin to serve (${found.length} found: ${found.map((p) => p.name).join(", ")}); ${looked}. See why with 'cxagent list', then restart the server`;
}

function skipReason(error: CxError, ref: string): string {
  if (error.code === "E_NOT_APPROVED") {
    const why = error.details?.state === "changed" ? "its files changed since it was approved" : "it is not approved";
    return `${why}; approve it with: cxagent approve ${ref}`;
  }
  return `${error.message}${error.hint ? ` (${error.hint})` : ""}`;
}
