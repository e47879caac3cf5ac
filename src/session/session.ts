/**
 * A session: the plugins loaded together, the names they hold, and their lifetimes. Scripts use
 * it directly (`await using session = await Session.open()`); every CLI command runs inside one.
 */
import { ResultStore } from "../results/store.ts";
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { CxError } from "../errors.ts";
import type { Manifest } from "../protocol/manifest.ts";
import { type Logger, LEVEL_NAMES, silentLogger } from "../log.ts";
import { type Config, configPath, readConfig, type ToolChoice } from "../discovery/config.ts";
import { type ProjectConfig, readProjectConfig } from "../discovery/project-config.ts";
import { GATE_MS } from "../host/gate.ts";
import { unmatchedText } from "../host/tool-policy.ts";
import { type Resolved, resolveReference, type SearchFolder, searchFolders } from "../discovery/discover.ts";
import { type Folders, resolveFolders } from "../discovery/paths.ts";
import { approvedByPath } from "./approved-by-path.ts";
import { catalog, type CatalogEntry } from "../discovery/catalog.ts";
import { readApprovals, revokeApproval } from "../trust/approvals.ts";
import type { ConfirmTrust } from "../trust/check.ts";
import { makeNonDumpable } from "../host/nondumpable.ts";
import { sweepSnapshots } from "../host/child-transport.ts";
import { snapshotBase } from "../host/private-folder.ts";
import type { Plugin, PluginEventHooks } from "../host/plugin.ts";
import { reap, type ReapEntry, type ReapReport } from "../reaper/reap.ts";
import type { Owned } from "../reaper/ours.ts";
import { recordFiles, SessionRecord } from "../reaper/record.ts";
import { type CheckedSchemas, checkedSchemas } from "../json-schema/checked.ts";
import { type Inspection, inspect, inspectLocation, recordInspected, refusalOf, trustRequestOf } from "./inspect.ts";
import { composeInstructions } from "./instructions.ts";
import { pluginHostEnv } from "./host-env.ts";
import { SecretBroker, withoutBoundEnv } from "../secrets/broker.ts";
import { type HostSettings, settleHostSettings } from "../protocol/host-settings.ts";
import { type LoadTimings, runLoadPipeline } from "./pipeline.ts";
import { checkToolChoice, LOAD_OPTION, SESSION_OPTION } from "./selection.ts";

export { BUILTIN_TOOLS } from "./names.ts";

export type { AvailablePlugin, ApprovalResult, ApproveOptions, LoadOptions, SessionOptions } from "./options.ts";
import type { AvailablePlugin, ApprovalResult, ApproveOptions, LoadOptions, SessionOptions } from "./options.ts";

export class Session implements AsyncDisposable {
  /** This session's id: random, told to each Cortex plugin with every call (its session_id). */
  readonly id: string = crypto.randomUUID();
  readonly cwd: string;
  readonly logger: Logger;
  readonly folders: Folders;
  readonly config: Config;
  /** The file `config` was read from. */
  readonly configFile: string;
  /** The project's `.cxagent/config.json` in `cwd`, which can only narrow `config`; null when there is none. */
  readonly project: ProjectConfig | null;
  /** Secret bindings, resolved when a plugin asks, and the redactor all plugin text passes through (issue 40). */
  readonly secrets: SecretBroker;
  private readonly tools: ToolChoice | undefined;
  private readonly options: SessionOptions;
  /** What every plugin host of this session gets as its environment. */
  private readonly hostEnv: Record<string, string>;
  /** Every plugin host's settings (pool, poll, spin, deadlines, environment, this session's id), settled once. */
  private readonly host: HostSettings;
  /** Where module plugins' snapshots are written (SessionOptions.snapshotDir). */
  readonly snapshotDir: string;
  private readonly loaded = new Map<string, Plugin>();
  private closed = false;
  private record: SessionRecord | null = null;
  /** Read at the first sidecar this session checks, then kept (json-schema/checked.ts). */
  private schemas: CheckedSchemas | null = null;
  /** Whole results over a delivery cap, by reference (issue 41): `<state>/results`. */
  readonly results: ResultStore;
  /** What reaping found when this session opened. */
  reaped: ReapReport = { entries: [], live: [], corrupt: [], refused: [] };

  private constructor(options: SessionOptions) {
    this.options = options;
    this.cwd = resolve(options.cwd ?? process.cwd());
    this.logger = options.logger ?? silentLogger;
    this.folders = resolveFolders(options);
    this.config = readConfig(this.folders.configDir);
    this.results = new ResultStore(this.folders.stateDir);
    this.hostEnv = withoutBoundEnv(pluginHostEnv(process.env, options.env), this.config);
    this.snapshotDir = options.snapshotDir ?? snapshotBase(this.folders.stateDir);
    this.host = settleHostSettings({ ...options, env: this.hostEnv, spinUs: options.spinUs ?? spinFromEnv(options.env), sessionId: this.id, snapshotDir: this.snapshotDir });
    this.configFile = configPath(this.folders.configDir);
    this.project = readProjectConfig(this.cwd, { config: this.config, path: this.configFile, gateMs: GATE_MS });
    this.tools = checkToolChoice(options.tools, SESSION_OPTION);
    this.secrets = new SecretBroker({ config: this.config, configFile: this.configFile, project: this.project });
  }

  /**
   * Opens a session: checks the project folder and reads (and validates) config.json and the
   * project's .cxagent/config.json, which is refused whole if it would widen anything.
   */
  static async open(options: SessionOptions = {}): Promise<Session> {
    const cwd = resolve(options.cwd ?? process.cwd());
    if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
      throw new CxError("E_INVALID_INPUT", `the project folder ${cwd} does not exist or is not a folder`, {
        hint: "choose an existing folder as the project folder",
        next: { do: "choose-folder", which: "project", path: cwd },
      });
    }
    const session = new Session(options);
    // Before any plugin runs: plugin code must not take this process's descriptors (the pipes to
    // every plugin host) with pidfd_getfd or /proc/<pid>/fd.
    makeNonDumpable();
    // A session that dies leaves its record (removed only once its plugin hosts are gone, each
    // after its snapshot): with no record there is nothing to reap and no snapshot to look for,
    // and the temporary folder, which may hold thousands of names, is not read.
    if (options.reap !== false && recordFiles(session.folders.stateDir).length > 0) {
      session.reaped = await reap({ stateDir: session.folders.stateDir });
      for (const e of session.reaped.entries) session.logger.warn(describeReaped(e));
      for (const c of session.reaped.corrupt) session.logger.warn(`a session record could not be read and was kept: ${c.problem}`);
      for (const r of session.reaped.refused) session.logger.warn(`${r.problem}; it was kept for you to inspect and remove`);
      // What a TypeScript plugin's host imported from, left behind with it.
      for (const path of sweepSnapshots(session.snapshotDir)) session.logger.debug(`removed ${path}, a plugin's snapshot its dead session left`);
    }
    return session;
  }

  /** Who this session asks to approve a plugin (SessionOptions.confirmTrust); `cxagent check` asks the same. */
  get confirmTrust(): ConfirmTrust | undefined {
    return this.options.confirmTrust ?? undefined;
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
    return this.catalog().map((e) => ({
      name: e.name,
      ref: e.configured || !e.location ? e.name : e.location.library,
      configured: e.configured,
      enabled: (this.config.plugins.get(e.name)?.enabled ?? true) && this.project?.plugins.get(e.name)?.enabled !== false,
      problem: e.problem,
    }));
  }

  /**
   * The plugins approved at a folder no search folder reaches (approved by their path), as `list`
   * shows them after `available()`'s: `ref` is the folder; one whose folder is gone has a problem.
   */
  approvedByPath(): AvailablePlugin[] {
    return approvedByPath(this.folders.stateDir, this.catalog(), (r) => this.locate(r)).map((a) => ({
      name: a.name,
      ref: a.location?.library ?? a.directory,
      configured: false,
      enabled: (this.config.plugins.get(a.name)?.enabled ?? true) && this.project?.plugins.get(a.name)?.enabled !== false,
      problem: a.gone ? `its folder ${a.directory} is gone` : a.problem,
    }));
  }

  /**
   * Every plugin config.json names, then every one discovery finds, with where it is (or why it
   * is nowhere) and the same-named plugins it shadows; sidecars are read, no plugin code runs.
   */
  catalog(): CatalogEntry[] {
    return catalog(this.config, this.searchFolders, this.cwd);
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
    return {
      config: this.config,
      configFile: this.configFile,
      project: this.project,
      searchFolders: this.searchFolders,
      cwd: this.cwd,
      stateDir: this.folders.stateDir,
      env: this.hostEnv,
      loaded: this.plugins.map((p) => p.manifest),
      checkedSchemas: (this.schemas ??= checkedSchemas(this.folders.stateDir)),
    };
  }

  /**
   * Loads a plugin through the pipeline resolve → sidecar → names → trust → spawn → compare →
   * start (session/pipeline.ts). No plugin code runs before trust is settled, and the bytes that
   * run are the bytes inspected.
   */
  async load(ref: string, options: LoadOptions = {}): Promise<Plugin> {
    return (await this.loadTimed(ref, options)).plugin;
  }

  /** The same, with how long each step took. */
  async loadTimed(ref: string, options: LoadOptions = {}): Promise<{ plugin: Plugin; timings: LoadTimings }> {
    if (this.closed) throw new CxError("E_STOPPED", "this session is closed");
    const tools = checkToolChoice(options.tools, LOAD_OPTION);
    const loaded = await runLoadPipeline(ref, { ...options, tools }, {
      locate: (r) => this.locate(r),
      inspectAt: (location) => this.inspectAt(location),
      loaded: () => this.plugins.map((p) => p.manifest),
      settingsOf: (entry) => this.config.plugins.get(entry)?.settings,
      workerFoldersOf: (entry) => this.config.plugins.get(entry)?.workerFolders,
      idleMsOf: (entry) => this.config.plugins.get(entry)?.idleMs,
      outputsOf: (entry) => {
        const c = this.config.plugins.get(entry);
        return c && { readCapBytes: c.readCapBytes, maxOutputBytes: c.maxOutputBytes };
      },
      confirmTrust: this.options.confirmTrust ?? undefined,
      stateDir: this.folders.stateDir,
      cwd: this.cwd,
      hooksFor: (manifest) => this.hooksFor(manifest),
      secretsFor: (name, declared) => this.secrets.accessFor(name, name, declared),
      sessionTools: this.tools,
      runtime: { permission: this.options.permission, gateMs: this.options.gateMs, host: this.host, results: this.results },
    });
    this.loaded.set(loaded.plugin.name, loaded.plugin);
    for (const r of loaded.plugin.policy.unmatched) {
      this.logger.withTag(loaded.plugin.name).warn(unmatchedText(loaded.plugin.name, r));
    }
    return loaded;
  }

  /**
   * Approves a plugin's exact files at its folder (SPEC §6.3): with `hash`, only if they hash to
   * it; without, only if the person `confirm` asks says yes. Nothing runs.
   */
  async approve(ref: string, options: ApproveOptions = {}): Promise<ApprovalResult> {
    const inspected = this.inspect(ref);
    const { manifest, loadSet } = inspected;
    const refusal = refusalOf(inspected);
    if (refusal) throw refusal; // approving what would be refused at load only misleads
    const result = (already: boolean): ApprovalResult => ({ plugin: manifest.name, version: manifest.version, hash: loadSet.hash, folder: loadSet.realFolder, already });
    if (options.hash !== undefined) {
      const given = options.hash.trim().toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(given)) {
        throw new CxError("E_INVALID_INPUT", `a pinned hash is 64 hexadecimal digits, not '${options.hash}'`, { details: { given: options.hash } });
      }
      if (given !== loadSet.hash) {
        throw new CxError("E_NOT_APPROVED", `plugin '${manifest.name}' was not approved: its files hash to ${loadSet.hash}, not to the ${given} you gave`, {
          hint: "the files differ from the ones you meant to approve; review them before you approve these",
          details: { plugin: manifest.name, computed: loadSet.hash, given },
        });
      }
      if (inspected.trust.state === "approved") return result(true);
      recordInspected(inspected, this.folders.stateDir);
      return result(false);
    }
    if (inspected.trust.state === "approved") return result(true);
    const confirm = options.confirm ?? this.options.confirmTrust ?? undefined;
    if (!confirm) {
      throw new CxError("E_NEEDS_TTY", `approving plugin '${manifest.name}' needs a person to ask, and there is none`, {
        hint: "review its files, then pin their hash",
        next: { do: "approve", ref, hash: loadSet.hash },
        details: { plugin: manifest.name, hash: loadSet.hash },
      });
    }
    if (!(await confirm(trustRequestOf(inspected)))) {
      throw new CxError("E_DENIED", `plugin '${manifest.name}' was not approved`);
    }
    recordInspected(inspected, this.folders.stateDir);
    return result(false);
  }

  /**
   * Withdraws approvals: of the plugin `ref` names, at its folder; with `allFolders`, of every
   * plugin of that name. A name alone still works once its files are gone. Returns the folders.
   */
  revoke(ref: string, options: { allFolders?: boolean } = {}): { plugin: string; folder: string | null; folders: string[] } {
    let name = ref;
    let folder: string | null = null;
    if (!options.allFolders) {
      try {
        const inspected = this.inspect(ref);
        name = inspected.name;
        folder = inspected.loadSet.realFolder;
      } catch (error) {
        // Gone from disk: its approvals can still be withdrawn by its name.
        if (!(error instanceof CxError) || !readApprovals(this.folders.stateDir).some((a) => a.plugin === ref)) throw error;
      }
    }
    return { plugin: name, folder, folders: revokeApproval(this.folders.stateDir, name, folder) };
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
    // Each plugin host's end removes what it verified gone from the session record, and the
    // record itself once it names nothing; what survived SIGKILL stays for the next reap.
    await Promise.all(plugins.map((p) => p.stop()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * The instructions the loaded plugins add for the model (SPEC §6.4): each plugin's text under a
   * heading naming its visible tools, in load order; none from a plugin whose tools are all hidden.
   */
  instructions(): string {
    return composeInstructions(this.plugins.map((p) => ({ manifest: p.manifest, tools: p.tools })));
  }

  private hooksFor(manifest: Manifest): PluginEventHooks {
    const { onOutput, onLog } = this.options;
    const name = manifest.name;
    const logger = this.logger.withTag(name);
    const log = (level: number, text: string) => {
      if (onLog) return onLog(name, level, text);
      const method = level >= 4 ? "error" : level === 3 ? "warn" : level === 2 ? "info" : "debug";
      logger[method](`${LEVEL_NAMES[level] ?? level}: ${text}`);
    };
    const record = () => (this.record ??= new SessionRecord(this.folders.stateDir));
    return {
      onOutput: (line: string) => (onOutput ? onOutput(name, line) : logger.debug(line)),
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

/** CXAGENT_HOST_SPIN_US, from the session's own env or this process's: a knob for benchmarks. */
function spinFromEnv(extra: Record<string, string> | undefined): number | null {
  const text = extra?.CXAGENT_HOST_SPIN_US ?? process.env.CXAGENT_HOST_SPIN_US;
  const n = text === undefined ? NaN : Number(text);
  return Number.isInteger(n) && n >= 0 ? n : null;
}
