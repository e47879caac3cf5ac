/**
 * Plugins served without a plugin host until a call needs one (issue 42 point 2). A plugin whose
 * manifest is known before it runs (its kind has a sidecar: the sidecar, checked when inspected, is
 * the manifest) is listed from that inspection; no code of it runs for `initialize` or
 * `tools/list`. Its first call loads it through the library (trust, spawn, the describe compared
 * with the sidecar, start), and a host idle for `idleMs` is stopped, to be started again by the
 * next call; `keepAlive` keeps it. A Cortex plugin declares its tools only when it runs: it is
 * served so once it has been started from the same bytes and settings by this cxagent (what it
 * described then is kept: session/described.ts), and loaded at once the first time. A client
 * plugin is lazy too: MCP cannot pass on the work it starts (the hub logs and drops it), so a host
 * started early would only make work to drop. Any other plugin (one not approved or refused) is
 * loaded at once, as before, and gives the same refusals.
 */
import { type FSWatcher, watch } from "node:fs";
import { type Changes, type CommandResult, CxError, type Inspection, type InvokeOptions, isCxError, type JobResult, type Manifest, type Plugin, type PluginChange, type Session, type Submit, type Tool } from "../index.ts";

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
  /** The kernel layers its host runs under (issue 39), null when unconfined or not started. */
  readonly sandboxLayers: readonly string[] | null;
}

/** A served plugin's changed files, waiting for approval. */
export interface PendingApproval {
  plugin: string;
  hash: string;
  folder: string;
  /** Which files differ from the approved ones (null: the old approval kept no list; a new plugin). */
  changes: Changes | null;
}

/** The default idle time before a lazily started host is stopped: 10 minutes. */
export const DEFAULT_IDLE_MS = 10 * 60_000;

/** Whether `inspection` lets its plugin be served lazily (else it is loaded at once). */
export function servableLazily(inspection: Inspection, loadedAs?: string): boolean {
  const approved = inspection.trust.state === "approved";
  // Names held by its own older version (still loaded while its last calls finish) are no collision.
  const collisions = inspection.collisions.filter((c) => c.holder !== loadedAs);
  const refused = inspection.shadowing !== null || inspection.dependencies.problem !== null || collisions.length > 0;
  const known = inspection.profile.sidecar || inspection.described !== null;
  return approved && !refused && inspection.enabled && known;
}

/**
 * Asked of an inspection servableLazily refused: approved and not refused, only not known before it
 * runs (a kind without a sidecar, these bytes never described here), so a start of them says.
 */
function describable(inspection: Inspection, loadedAs: string): boolean {
  return servableLazily({ ...inspection, described: inspection.manifest }, loadedAs);
}

export class LazyPlugin implements Served {
  readonly name: string;
  private inspection: Inspection;
  /** Its files changed and the new ones are not approved (yet): its tools are not listed. */
  private changed: string | null = null;
  /** The changed files waiting for approval (what a client may be asked to approve), or null. */
  private pending: PendingApproval | null = null;
  private plugin: Plugin | null = null;
  /** The old host's last calls, before a changed plugin's new bytes load. */
  private retiring: Promise<void> | null = null;
  private watcher: FSWatcher | null = null;
  private recheckTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly listListeners = new Set<() => void>();
  private loading: Promise<Plugin> | null = null;
  private running = 0;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly changeListeners = new Set<(change: PluginChange) => void>();
  private readonly submitListeners = new Set<(submit: Submit) => void>();
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
    this.inspection = inspection;
  }

  /** Its sidecar's, or (a Cortex plugin) what it described when last started from these bytes. */
  get manifest(): Manifest {
    return this.inspection.described ?? this.inspection.manifest;
  }

  /** Its host's kernel layers, once a call started it (Plugin.sandboxLayers). */
  get sandboxLayers(): readonly string[] | null {
    return this.plugin?.sandboxLayers ?? null;
  }

  /** The tools the model sees: none while its changed files wait for approval. */
  get tools(): readonly Tool[] {
    if (this.changed !== null) return [];
    const { hidden } = this.inspection.selection.policy;
    return hidden.size ? this.manifest.tools.filter((t) => !hidden.has(t.name)) : this.manifest.tools;
  }

  /** Calls `listener` when its tools leave the list or come back (live reload). */
  onListChanged(listener: () => void): () => void {
    this.listListeners.add(listener);
    return () => this.listListeners.delete(listener);
  }

  /**
   * Watches its folder (issue 42 point 3): a change takes its tools off the list until the new
   * bytes are approved (`recheck`, also called when the approvals change); calls running on the old
   * host finish there, and the next call loads the new bytes.
   */
  watch(): void {
    const folder = this.inspection.loadSet.realFolder;
    try {
      this.watcher = watch(folder, { recursive: true, persistent: false }, () => this.recheckSoon());
    } catch {
      this.watcher = null; // a folder that cannot be watched is served as it is
    }
  }

  /** Looks at its files again (debounced): a new hash is listed only once approved. */
  recheckSoon(): void {
    if (this.recheckTimer) clearTimeout(this.recheckTimer);
    this.recheckTimer = setTimeout(() => this.recheck(), 100);
    this.recheckTimer.unref();
  }

  private recheck(): void {
    this.recheckTimer = null;
    if (this.closed) return;
    let fresh: Inspection | null = null;
    let problem = "";
    try {
      fresh = this.session.inspect(this.ref);
    } catch (error) {
      if (!isCxError(error)) throw error;
      problem = error.message;
    }
    const same = fresh !== null && fresh.loadSet.hash === this.inspection.loadSet.hash;
    const unapproved = fresh !== null && fresh.trust.state !== "approved";
    // The bytes it serves lost their approval (cxagent revoke): off the list, and its host goes once
    // its running calls end. The client is not asked to approve them again: the user just said no.
    const revoked = same && unapproved;
    if (unapproved) {
      const folder = this.inspection.loadSet.realFolder;
      problem = revoked ? `its approval was withdrawn; approve it again with: cxagent approve ${folder}` : `its files changed since it was approved; approve them with: cxagent approve ${folder}`;
    }
    if (same && this.changed === null && !problem) return;
    const wasListed = this.changed === null;
    let swapped = false;
    this.pending = fresh && unapproved && !revoked ? { plugin: this.name, hash: fresh.loadSet.hash, folder: fresh.loadSet.realFolder, changes: fresh.trust.state === "changed" ? fresh.trust.changes : null } : null;
    if (revoked) this.retire();
    if (fresh && !problem && servableLazily(fresh, this.name)) {
      this.changed = null;
      if (!same) this.swap(fresh);
      swapped = !same;
    } else if (fresh && !problem && !same && describable(fresh, this.name)) {
      // New approved bytes that declare their tools only when they run: start them now (after the
      // old host's last calls) and list what they describe.
      this.changed = "its new files are starting, to say what tools they have; try again in a moment";
      this.swap(fresh);
      void this.describeNew();
    } else {
      this.changed = problem || "its changed files cannot be served lazily; restart the server to load them";
    }
    if (wasListed !== (this.changed === null) || swapped) for (const listener of [...this.listListeners]) listener();
  }

  /** Loads the swapped-in bytes at once (describable), then lists their tools, or says why it could not. */
  private async describeNew(): Promise<void> {
    const swap = this.swaps;
    try {
      await this.retiring;
      await this.load();
      if (this.swaps !== swap || this.closed) return; // its files changed again meanwhile
      this.changed = null;
      if (this.running === 0) this.armIdle();
    } catch (error) {
      if (this.swaps !== swap || this.closed) return;
      this.changed = `its new files failed to start: ${isCxError(error) ? error.message : String(error)}`;
    }
    for (const listener of [...this.listListeners]) listener();
  }

  /** New approved bytes: the old host serves its running calls, then goes; the next call loads these. */
  private swap(fresh: Inspection) {
    this.swaps++;
    this.inspection = fresh;
    this.retire();
  }

  /** Its host, if one runs, ends once its running calls have; the next call starts a new one. */
  private retire() {
    const old = this.plugin;
    this.plugin = null;
    this.clearIdle();
    if (!old) return;
    const drained = this.running === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.drained = resolve));
    this.retiring = drained.then(() => this.session.unload(old.name)).finally(() => (this.retiring = null));
  }

  /** Its changed files while they wait for approval, else null. */
  get awaitingApproval(): PendingApproval | null {
    return this.changed === null ? null : this.pending;
  }

  /**
   * Approves its changed files, only if they still hash to `hash` (what the person was shown);
   * its tools come back once they are looked at again.
   */
  async approvePending(hash: string): Promise<void> {
    await this.session.approve(this.ref, { hash });
    this.recheckSoon();
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

  /** What a client plugin submits while a host of it runs (none runs before its first call). */
  onSubmit(listener: (submit: Submit) => void): () => void {
    this.submitListeners.add(listener);
    return () => this.submitListeners.delete(listener);
  }

  /** Stops its host, if one runs; later calls are refused by the closed session. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearIdle();
    this.watcher?.close();
    if (this.recheckTimer) clearTimeout(this.recheckTimer);
  }

  private drained: (() => void) | null = null;
  /** How many times new bytes were swapped in (a describe of older bytes finishing late is ignored). */
  private swaps = 0;

  private async busy<T>(work: (plugin: Plugin) => Promise<T>): Promise<T> {
    if (this.changed !== null) throw new CxError("E_NOT_APPROVED", `plugin '${this.name}': ${this.changed}`, { details: { plugin: this.name } });
    const plugin = this.plugin ?? (await this.retiring, await this.load());
    this.running++;
    this.clearIdle();
    try {
      return await work(plugin);
    } finally {
      if (--this.running === 0) {
        const drained = this.drained;
        this.drained = null;
        if (drained) drained();
        // Off the list since this host started (a revoke or a change while it loaded): no call can
        // reach it, so it goes now rather than at its idle time.
        else if (this.changed !== null) this.retire();
        else this.armIdle();
      }
    }
  }

  private load(): Promise<Plugin> {
    if (this.plugin) return Promise.resolve(this.plugin);
    this.loading ??= this.session.load(this.ref).then(
      (plugin) => {
        this.plugin = plugin;
        this.loading = null;
        // A Cortex plugin listed from what it described before, describing otherwise now (or new bytes
        // never described): list what it says now.
        if (!this.inspection.profile.sidecar && JSON.stringify(plugin.manifest) !== JSON.stringify(this.inspection.described)) {
          this.inspection = { ...this.session.inspect(this.ref), described: plugin.manifest };
          for (const listener of [...this.listListeners]) listener();
        }
        plugin.onChange((change) => {
          for (const listener of [...this.changeListeners]) listener(change);
        });
        plugin.onSubmit((submit) => {
          for (const listener of [...this.submitListeners]) listener(submit);
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
