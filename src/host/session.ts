/**
 * A session: the plugins loaded together, the names they hold, and their lifetimes. Scripts use
 * it directly (`await using session = await Session.open()`); every CLI command runs inside one.
 */
import { resolve } from "node:path";
import { CxError } from "../errors.ts";
import { firstDifference } from "../protocol/compare.ts";
import type { Manifest } from "../protocol/manifest.ts";
import { type Logger, LEVEL_NAMES, silentLogger } from "../log.ts";
import { readSidecar } from "../discovery/sidecar.ts";
import { looksLikePath, type PluginLocation, resolvePath } from "../discovery/resolve.ts";
import { Plugin, type PluginSpec } from "./plugin.ts";

/** Tool names the agent itself provides; no plugin may claim them (SPEC §6.4). */
export const BUILTIN_TOOLS = [
  "read_file", "glob", "grep", "write_file", "replace_in_file", "run_shell",
  "http_request", "web_fetch", "ask_user", "todowrite", "agent", "skill",
] as const;

export interface SessionOptions {
  /** The project folder: plugins' working directory and the scope of grants. */
  cwd?: string;
  logger?: Logger;
  /** Every line a plugin writes to stdout or stderr. Default: the logger, at debug level. */
  onOutput?: (plugin: string, line: string) => void;
  /** Log reports a plugin makes outside a call, and host messages about it. */
  onLog?: (plugin: string, level: number, text: string) => void;
  /** Extra environment variables for every plugin host this session starts. */
  env?: Record<string, string>;
  /** Deadlines, for tests and impatient scripts. */
  startupMs?: number;
  startMs?: number;
  stopMs?: number;
  pollMs?: number;
}

export interface LoadOptions {
  /** The plugin's settings, passed verbatim to start. */
  settings?: unknown;
}

export class Session implements AsyncDisposable {
  readonly cwd: string;
  readonly logger: Logger;
  private readonly options: SessionOptions;
  private readonly loaded = new Map<string, Plugin>();
  private closed = false;

  private constructor(options: SessionOptions) {
    this.options = options;
    this.cwd = resolve(options.cwd ?? process.cwd());
    this.logger = options.logger ?? silentLogger;
  }

  static async open(options: SessionOptions = {}): Promise<Session> {
    return new Session(options);
  }

  /** The loaded plugins, in load order. */
  get plugins(): Plugin[] {
    return [...this.loaded.values()];
  }

  plugin(name: string): Plugin | undefined {
    return this.loaded.get(name);
  }

  /** Resolves a reference to a plugin's files without running anything. */
  locate(ref: string): PluginLocation {
    if (looksLikePath(ref)) return resolvePath(ref, this.cwd);
    throw new CxError("E_NOT_FOUND", `no plugin named '${ref}'`, {
      hint: "give the path of the plugin's library, sidecar or folder",
    });
  }

  /** Loads a plugin: sidecar, name claims, spawn, describe, comparison, start. */
  async load(ref: string, options: LoadOptions = {}): Promise<Plugin> {
    if (this.closed) throw new CxError("E_STOPPED", "this session is closed");
    const location = this.locate(ref);
    const sidecar = readSidecar(location.sidecar, location.library);
    this.claimNames(sidecar);
    const spec: PluginSpec = {
      name: sidecar.name,
      library: location.library,
      expected: sidecar,
      settings: options.settings ?? {},
      cwd: this.cwd,
      startupMs: this.options.startupMs,
      startMs: this.options.startMs,
      stopMs: this.options.stopMs,
      pollMs: this.options.pollMs,
      env: this.options.env,
    };
    const plugin = await Plugin.start(spec, this.hooksFor(sidecar.name), (described) => {
      const difference = firstDifference(sidecar, described);
      if (difference) {
        throw new CxError("E_MISMATCH", `plugin '${sidecar.name}' was refused: ${difference}`, {
          hint: `make ${location.sidecar} and cxagent_plugin_describe agree`,
        });
      }
    });
    this.loaded.set(plugin.name, plugin);
    return plugin;
  }

  /** Stops and forgets one plugin. */
  async unload(name: string): Promise<void> {
    const plugin = this.loaded.get(name);
    if (!plugin) return;
    this.loaded.delete(name);
    await plugin.stop();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const plugins = this.plugins.reverse();
    this.loaded.clear();
    await Promise.all(plugins.map((p) => p.stop()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Refuses a manifest whose tool or command names are built-ins or already held. */
  private claimNames(manifest: Manifest) {
    if (this.loaded.has(manifest.name)) {
      throw new CxError("E_COLLISION", `a plugin named '${manifest.name}' is already loaded in this session`);
    }
    for (const tool of manifest.tools) {
      if ((BUILTIN_TOOLS as readonly string[]).includes(tool.name)) {
        throw new CxError("E_COLLISION", `plugin '${manifest.name}' was refused: its tool '${tool.name}' is a built-in tool's name`, {
          hint: "a plugin's tool names must be its own; ask its author to rename the tool",
        });
      }
      const holder = this.plugins.find((p) => p.tools.some((t) => t.name === tool.name));
      if (holder) {
        throw new CxError("E_COLLISION", `plugin '${manifest.name}' was refused: its tool '${tool.name}' is already held by plugin '${holder.name}'`, {
          hint: `unload '${holder.name}' first, or ask one of the authors to rename the tool`,
        });
      }
    }
    for (const command of manifest.commands) {
      const holder = this.plugins.find((p) => p.manifest.commands.some((c) => c.name === command.name));
      if (holder) {
        throw new CxError("E_COLLISION", `plugin '${manifest.name}' was refused: its command '${command.name}' is already held by plugin '${holder.name}'`);
      }
    }
  }

  private hooksFor(name: string) {
    const { onOutput, onLog } = this.options;
    const logger = this.logger.withTag(name);
    return {
      onOutput: (line: string) => (onOutput ? onOutput(name, line) : logger.debug(line)),
      onLog: (level: number, text: string) => {
        if (onLog) return onLog(name, level, text);
        const method = level >= 4 ? "error" : level === 3 ? "warn" : level === 2 ? "info" : "debug";
        logger[method](`${LEVEL_NAMES[level] ?? level}: ${text}`);
      },
    };
  }
}
