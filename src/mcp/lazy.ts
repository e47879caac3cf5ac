/**
 * Plugins served without a plugin host until a call needs one (issue 42 point 2). A plugin whose
 * manifest is known before it runs (its kind has a sidecar: the sidecar, checked when inspected, is
 * the manifest) is listed from that inspection; no code of it runs for `initialize` or
 * `tools/list`. Its first call loads it through the library (trust, spawn, the describe compared
 * with the sidecar, start), and a host idle for `idleMs` is stopped, to be started again by the
 * next call; `keepAlive` keeps it. Any other plugin (a Cortex one declares its tools only when it
 * runs; a client one originates work; one not approved or refused) is loaded at once, as before,
 * and gives the same refusals.
 */
import type { CommandResult, Inspection, InvokeOptions, JobResult, Manifest, Plugin, PluginChange, Session, Submit, Tool } from "../index.ts";

/** What the hub serves: a loaded `Plugin`, or a `LazyPlugin` standing for one. */
export interface Served {
  readonly name: string;
  readonly manifest: Manifest;
  /** The tools the model sees (the manifest's, less the hidden ones). */
  readonly tools: readonly Tool[];
  invoke(tool: string, args: unknown, options: InvokeOptions): Promise<JobResult>;
  command(name: string, text?: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<CommandResult>;
  onChange(listener: (change: PluginChange) => void): () => void;
  onSubmit(listener: (submit: Submit) => void): () => void;
}

/** The default idle time before a lazily started host is stopped: 10 minutes. */
export const DEFAULT_IDLE_MS = 10 * 60_000;

/** Whether `inspection` lets its plugin be served lazily (else it is loaded at once). */
export function servableLazily(inspection: Inspection): boolean {
  const approved = inspection.trust.state === "approved";
  const refused = inspection.shadowing !== null || inspection.dependencies.problem !== null || inspection.collisions.length > 0;
  return approved && !refused && inspection.enabled && inspection.profile.sidecar && !inspection.manifest.client;
}

export class LazyPlugin implements Served {
  readonly name: string;
  readonly manifest: Manifest;
  readonly tools: readonly Tool[];
  private plugin: Plugin | null = null;
  private loading: Promise<Plugin> | null = null;
  private running = 0;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly changeListeners = new Set<(change: PluginChange) => void>();
  private closed = false;

  constructor(
    private readonly session: Session,
    /** What to load: the reference the plugin was found by. */
    private readonly ref: string,
    inspection: Inspection,
    /** Stop the host after this long without a call; null = keep it (keepAlive). */
    private readonly idleMs: number | null,
  ) {
    this.name = inspection.name;
    this.manifest = inspection.manifest;
    const { hidden } = inspection.selection.policy;
    this.tools = hidden.size ? inspection.manifest.tools.filter((t) => !hidden.has(t.name)) : inspection.manifest.tools;
  }

  /** Whether a plugin host runs for it now. */
  get started(): boolean {
    return this.plugin !== null;
  }

  async invoke(tool: string, args: unknown, options: InvokeOptions): Promise<JobResult> {
    return this.busy((plugin) => plugin.invoke(tool, args, options));
  }

  async command(name: string, text = "", options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CommandResult> {
    return this.busy((plugin) => plugin.command(name, text, options));
  }

  onChange(listener: (change: PluginChange) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** A lazy plugin is never a client one (servableLazily): it submits nothing. */
  onSubmit(): () => void {
    return () => {};
  }

  /** Stops its host, if one runs; later calls are refused by the closed session. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearIdle();
  }

  private async busy<T>(work: (plugin: Plugin) => Promise<T>): Promise<T> {
    this.running++;
    this.clearIdle();
    try {
      return await work(await this.load());
    } finally {
      if (--this.running === 0) this.armIdle();
    }
  }

  private load(): Promise<Plugin> {
    if (this.plugin) return Promise.resolve(this.plugin);
    this.loading ??= this.session.load(this.ref).then(
      (plugin) => {
        this.plugin = plugin;
        this.loading = null;
        plugin.onChange((change) => {
          for (const listener of [...this.changeListeners]) listener(change);
        });
        return plugin;
      },
      (error: unknown) => {
        this.loading = null;
        throw error;
      },
    );
    return this.loading;
  }

  private armIdle() {
    if (this.idleMs === null || this.closed || !this.plugin) return;
    this.idleTimer = setTimeout(() => void this.stopIdle(), this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdle() {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private async stopIdle() {
    this.idleTimer = null;
    if (this.running > 0 || !this.plugin) return;
    this.plugin = null;
    await this.session.unload(this.name);
  }
}
