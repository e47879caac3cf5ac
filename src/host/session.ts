/**
 * A session: the plugins loaded together, the names they hold, and their lifetimes. Scripts use
 * it directly (`await using session = await Session.open()`); every CLI command runs inside one.
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { CxError } from "../errors.ts";
import { firstDifference } from "../protocol/compare.ts";
import type { Manifest } from "../protocol/manifest.ts";
import { type Logger, LEVEL_NAMES, silentLogger } from "../log.ts";
import { inertBlock } from "../inert.ts";
import { type Config, readConfig } from "../discovery/config.ts";
import { type Resolved, resolveReference, type SearchFolder, searchFolders } from "../discovery/discover.ts";
import { type Folders, resolveFolders } from "../discovery/paths.ts";
import { catalog } from "../discovery/catalog.ts";
import { askOnTerminal, type ConfirmTrust, confirmTrusted } from "../trust/check.ts";
import { projectScope } from "../trust/grants.ts";
import { libraryBytes } from "../trust/hash.ts";
import { isInteractive } from "../prompt.ts";
import { type Inspection, inspect, inspectLocation, recordInspected, refusalOf, trustRequestOf } from "../session/inspect.ts";
import type { Approval, Approver } from "./gate.ts";
import { reap, type ReapEntry, type ReapReport } from "../reaper/reap.ts";
import type { Owned } from "../reaper/ours.ts";
import { SessionRecord } from "../reaper/record.ts";
import { makeNonDumpable } from "./nondumpable.ts";
import { Plugin, type PluginSpec } from "./plugin.ts";

/** Tool names the agent itself provides; no plugin may claim them (SPEC §6.4). */
export const BUILTIN_TOOLS = [
  "read_file", "glob", "grep", "write_file", "replace_in_file", "run_shell",
  "http_request", "web_fetch", "ask_user", "todowrite", "agent", "skill",
] as const;

export interface SessionOptions {
  /** The project folder: plugins' working directory and the scope of grants. */
  cwd?: string;
  /** Where config.json is (default: $CXAGENT_CONFIG_DIR, else ~/.config/cxagent). */
  configDir?: string;
  /** Where approvals, grants and session records are (default: $CXAGENT_STATE_DIR, else ~/.local/state/cxagent). */
  stateDir?: string;
  /**
   * Asks a person whether to approve a plugin whose exact files were not approved yet; a true
   * answer is recorded. Default: a prompt on the terminal when there is one, else refuse.
   * Pass `null` to never ask.
   */
  confirmTrust?: ConfirmTrust | null;
  logger?: Logger;
  /** Every line a plugin writes to stdout or stderr. Default: the logger, at debug level. */
  onOutput?: (plugin: string, line: string) => void;
  /** Log reports a plugin makes outside a call, and host messages about it. */
  onLog?: (plugin: string, level: number, text: string) => void;
  /**
   * Decides calls that need permission when the call itself names nobody. Default: deny — a
   * script decides its own prompts.
   */
  approve?: Approver | Approval;
  /** How long a "dynamic" tool's gate may take before it counts as failed (default 500 ms). */
  gateMs?: number;
  /** End processes left behind by sessions that died, before this one starts (default true). */
  reap?: boolean;
  /** Extra environment variables for every plugin host this session starts. */
  env?: Record<string, string>;
  /** At most this many calls of one plugin in native code at once (default 16). */
  poolCap?: number;
  /** When every one of those has run this long, further calls fail at once with E_BUSY (default 1000 ms). */
  stuckMs?: number;
  /** Deadlines, for tests and impatient scripts. */
  startupMs?: number;
  startMs?: number;
  stopMs?: number;
  pollMs?: number;
}

/** A plugin this session could load, as config.json and discovery name it (no plugin code runs). */
export interface AvailablePlugin {
  name: string;
  /** What to pass to `load()`. */
  ref: string;
  /** Named in config.json (else found by discovery). */
  configured: boolean;
  /** False when config.json says enabled: false. */
  enabled: boolean;
  /** Why it cannot be loaded as it is (a missing file, a bad sidecar), or null. */
  problem: string | null;
}

export interface LoadOptions {
  /** The plugin's settings, passed verbatim to start (default: its settings in config.json). */
  settings?: unknown;
  /** Load it even if config.json says enabled: false, for this session only. Trust still applies. */
  once?: boolean;
}

export class Session implements AsyncDisposable {
  readonly cwd: string;
  readonly logger: Logger;
  readonly folders: Folders;
  readonly config: Config;
  private readonly options: SessionOptions;
  private readonly loaded = new Map<string, Plugin>();
  private closed = false;
  private record: SessionRecord | null = null;
  /** What reaping found when this session opened. */
  reaped: ReapReport = { entries: [], live: [], corrupt: [], refused: [] };

  private constructor(options: SessionOptions) {
    this.options = options;
    this.cwd = resolve(options.cwd ?? process.cwd());
    this.logger = options.logger ?? silentLogger;
    this.folders = resolveFolders(options);
    this.config = readConfig(this.folders.configDir);
  }

  /** Opens a session: checks the project folder and reads (and validates) config.json. */
  static async open(options: SessionOptions = {}): Promise<Session> {
    const cwd = resolve(options.cwd ?? process.cwd());
    if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
      throw new CxError("E_INVALID_INPUT", `the project folder ${cwd} does not exist or is not a folder`, {
        hint: "give --cwd an existing folder",
      });
    }
    const session = new Session(options);
    // Before any plugin runs: plugin code must not take this process's descriptors (the pipes to
    // every plugin host) with pidfd_getfd or /proc/<pid>/fd.
    makeNonDumpable();
    if (options.reap !== false) {
      session.reaped = await reap({ stateDir: session.folders.stateDir });
      for (const e of session.reaped.entries) session.logger.warn(describeReaped(e));
      for (const c of session.reaped.corrupt) session.logger.warn(`a session record could not be read and was kept: ${c.problem}`);
      for (const r of session.reaped.refused) session.logger.warn(`${r.problem}; it was kept for you to inspect and remove`);
    }
    return session;
  }

  /** The folders searched for plugins, in order. */
  get searchFolders(): SearchFolder[] {
    return searchFolders(this.config, this.cwd, this.folders.configDir);
  }

  /** The loaded plugins, in load order. */
  get plugins(): Plugin[] {
    return [...this.loaded.values()];
  }

  plugin(name: string): Plugin | undefined {
    return this.loaded.get(name);
  }

  /**
   * Every plugin config.json names, then every one discovery finds, in the order a reference would
   * resolve them; sidecars are read, no plugin code runs. Trust is settled by `load()`.
   */
  available(): AvailablePlugin[] {
    return catalog(this.config, this.searchFolders, this.cwd).map((e) => ({
      name: e.name,
      ref: e.configured || !e.location ? e.name : e.location.library,
      configured: e.configured,
      enabled: this.config.plugins.get(e.name)?.enabled ?? true,
      problem: e.problem,
    }));
  }

  /** Resolves a reference (config name, path, discovered name) without running anything. */
  locate(ref: string): Resolved {
    return resolveReference(ref, this.config, this.searchFolders, this.cwd);
  }

  /**
   * Everything known about a plugin before any of its code runs (location, sidecar, hash, file
   * list, trust, folder sharers, config entry, shadowing, dependencies), from one read of its folder.
   */
  inspect(ref: string): Inspection {
    return inspect(ref, this.inspectContext());
  }

  /** The same, for a plugin already located (as `list` finds them). */
  inspectAt(location: Resolved): Inspection {
    return inspectLocation(location, this.inspectContext());
  }

  private inspectContext() {
    return { config: this.config, searchFolders: this.searchFolders, cwd: this.cwd, stateDir: this.folders.stateDir, env: { ...process.env, ...this.options.env } };
  }

  /**
   * Loads a plugin: inspect (one read of its folder: sidecar, hash, config, dependencies), name
   * claims, trust, then spawn, handshake, describe, comparison with the sidecar, attach and start.
   * No plugin code runs before trust is settled, and the bytes that run are the bytes inspected.
   */
  async load(ref: string, options: LoadOptions = {}): Promise<Plugin> {
    if (this.closed) throw new CxError("E_STOPPED", "this session is closed");
    const inspection = this.inspect(ref);
    const { manifest: sidecar, location, loadSet } = inspection;
    const refusal = refusalOf(inspection);
    if (inspection.shadowing && refusal) throw refusal;
    if (!inspection.enabled && !options.once) {
      throw new CxError("E_DISABLED", `plugin '${sidecar.name}' is disabled in config.json (enabled: false), so it was not loaded`, {
        hint: "load it for this run only with --once (it still needs approval), or set enabled: true",
      });
    }
    if (refusal) throw refusal;
    this.claimNames(sidecar);
    const trusted = await confirmTrusted(trustRequestOf(inspection), { approveCommand: ref, confirm: this.confirmTrust() });
    if (trusted === "now") recordInspected(inspection, this.folders.stateDir);
    const configured = inspection.settings ? this.config.plugins.get(inspection.settings.entry) : undefined;
    const spec: PluginSpec = {
      name: sidecar.name,
      library: location.library,
      libraryBytes: libraryBytes(loadSet),
      dependencies: inspection.dependencies.plan!.inSet.map((d) => ({ path: d.path, soname: d.soname, bytes: loadSet.kept.get(d.path)! })),
      folder: loadSet.realFolder,
      settings: options.settings ?? configured?.settings ?? {},
      cwd: this.cwd,
      scope: projectScope(this.cwd),
      stateDir: this.folders.stateDir,
      gateMs: this.options.gateMs,
      approve: this.options.approve,
      startupMs: this.options.startupMs,
      startMs: this.options.startMs,
      stopMs: this.options.stopMs,
      pollMs: this.options.pollMs,
      poolCap: this.options.poolCap,
      stuckMs: this.options.stuckMs,
      env: this.options.env,
    };
    const plugin = await Plugin.start(spec, this.hooksFor(sidecar), (described) => {
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
    this.record?.close();
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

  private confirmTrust(): ConfirmTrust | undefined {
    if (this.options.confirmTrust !== undefined) return this.options.confirmTrust ?? undefined;
    return isInteractive() ? askOnTerminal : undefined;
  }

  /**
   * The instructions the loaded plugins add for the model (SPEC §6.4): each plugin's text under a
   * heading naming its tools, in load order.
   */
  instructions(): string {
    return composeInstructions(this.plugins.map((p) => p.manifest));
  }

  private hooksFor(manifest: Manifest) {
    const { onOutput, onLog } = this.options;
    const name = manifest.name;
    const logger = this.logger.withTag(name);
    const log = (level: number, text: string) => {
      if (onLog) return onLog(name, level, text);
      const method = level >= 4 ? "error" : level === 3 ? "warn" : level === 2 ? "info" : "debug";
      logger[method](`${LEVEL_NAMES[level] ?? level}: ${inertBlock(text)}`);
    };
    const record = () => (this.record ??= new SessionRecord(this.folders.stateDir));
    return {
      onOutput: (line: string) => (onOutput ? onOutput(name, line) : logger.debug(inertBlock(line))),
      onLog: log,
      onSpawn: (host: Owned) => {
        record().add(host, name, "host");
      },
      onChild: (child: Owned) => {
        if (!manifest.spawns) log(3, `registered process ${child.pid} although its manifest says spawns: false; it was recorded anyway`);
        record().add(child, name, "child");
      },
      onGone: (pids: number[]) => this.record?.remove(pids),
    };
  }
}

function describeReaped(e: ReapEntry): string {
  const what =
    e.kind === "host"
      ? `the plugin host of plugin '${e.plugin}' (pid ${e.pid})`
      : `a process of plugin '${e.plugin}' (pid ${e.pid}${e.kind === "member" ? ", unregistered, in its plugin host's group" : ""})`;
  switch (e.outcome) {
    case "reused":
      return `left alone ${what}, whose pid now belongs to another process`;
    case "still-running":
      return `could not end ${what}, left by a session that died: it is still running after SIGKILL`;
    default:
      return `ended ${what} left by a session that died`;
  }
}

export function composeInstructions(manifests: readonly Manifest[]): string {
  return manifests
    .filter((m) => m.instructions)
    .map((m) => `## ${m.tools.length ? m.tools.map((t) => t.name).join(", ") : `${m.name} (no tools)`}\n\n${m.instructions!.trim()}\n`)
    .join("\n");
}
