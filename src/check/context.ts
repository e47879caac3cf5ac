/**
 * What the checks of one `cxagent check` run share: the plugin as inspected before any of its code
 * ran, its symbols, the plugin hosts the run opens (in check mode), what they all saw, and the
 * calls one check makes that another judges too (made once, on first use).
 */
import type { CxError } from "../errors.ts";
import type { Resolved } from "../discovery/discover.ts";
import { checkManifest, type Manifest, type Tool } from "../protocol/manifest.ts";
import type { Inspection } from "../session/inspect.ts";
import type { ElfSymbols } from "../elf/symbols.ts";
import { type Answer, CheckHost, type Observations, type SpawnCheckHost } from "./host.ts";
import type { PluginKind } from "./report.ts";
import { profileOf } from "../kinds/index.ts";

export interface CheckTimeouts {
  /** Each invoke and command (default 10 s). */
  callMs: number;
  startMs: number;
  stopMs: number;
  /** A gate's deadline (the session default, 500 ms). */
  gateMs: number;
}

/** The main plugin host: started with empty settings, the one most checks call. */
export interface MainHost {
  host: CheckHost;
  /** What its start answered. */
  start: Answer;
  started: boolean;
}

export class CheckContext {
  readonly ref: string;
  readonly kind: PluginKind;
  readonly location: Resolved;
  /** Null when the sidecar could not be read (then `sidecarError` says why). */
  readonly inspection: Inspection | null;
  readonly sidecarError: CxError | null;
  readonly symbols: ElfSymbols | { error: string };
  readonly seen: Observations;
  /** The plugin hosts' working directory: a scratch folder of this run. */
  readonly scratch: string;
  readonly timeouts: CheckTimeouts;
  /** The poll interval of the run's plugin hosts. */
  readonly pollMs: number;
  /** The config.json settings of this plugin, if it has an entry (for the bad-settings check). */
  readonly configuredSettings: unknown;
  /** Whether plugin code may run: trust was settled. Null: it may not (why, in words). */
  runnable: string | null = "the plugin was not loaded";
  private readonly spawn: SpawnCheckHost;
  private readonly hosts: CheckHost[] = [];
  private mainHost: Promise<MainHost | CxError> | null = null;
  private firstMain: MainHost | CxError | null = null;
  private mainStopped = false;
  /** What the first plugin host described, for a kind without a sidecar (a Cortex plugin's tools). */
  private describedValue: Manifest | null = null;
  private readonly memos = new Map<string, Promise<unknown>>();
  /** What every start and stop answered, and in which situation. */
  readonly starts: { situation: string; settings: unknown; answer: Answer }[] = [];
  readonly stops: { situation: string; answer: Answer }[] = [];
  /** Tools whose call outlived its deadline: still running in native code, so not called again. */
  readonly hung = new Set<string>();
  /** When the main host's start answered (performance.now()), for the poll check's window. */
  mainStartedAt = 0;

  constructor(init: {
    ref: string;
    kind: PluginKind;
    location: Resolved;
    inspection: Inspection | null;
    sidecarError: CxError | null;
    symbols: ElfSymbols | { error: string };
    seen: Observations;
    scratch: string;
    timeouts: CheckTimeouts;
    pollMs: number;
    configuredSettings: unknown;
    spawn: SpawnCheckHost;
  }) {
    this.ref = init.ref;
    this.kind = init.kind;
    this.location = init.location;
    this.inspection = init.inspection;
    this.sidecarError = init.sidecarError;
    this.symbols = init.symbols;
    this.seen = init.seen;
    this.scratch = init.scratch;
    this.timeouts = init.timeouts;
    this.pollMs = init.pollMs;
    this.configuredSettings = init.configuredSettings;
    this.spawn = init.spawn;
  }

  /** The sidecar's manifest, when it could be read. */
  get sidecar(): Manifest | null {
    return this.inspection?.manifest ?? null;
  }

  /** The tools to call: the sidecar's, which describe must match; without a sidecar (Cortex), what the plugin described. */
  get tools(): readonly Tool[] {
    return profileOf(this.kind).sidecar ? (this.sidecar?.tools ?? []) : (this.describedValue?.tools ?? []);
  }

  /** The manifest the first plugin host described (valid), once it did; null before, or when it did not load. */
  get described(): Manifest | null {
    return this.describedValue;
  }

  /** Opens a plugin host in check mode (not started); the refusal when it does not become ready. */
  async open(): Promise<CheckHost | CxError> {
    if (this.runnable !== null) throw new Error(`internal: no plugin host may run: ${this.runnable}`);
    const host = await CheckHost.open(this.spawn, this.seen);
    if (host instanceof CheckHost) this.hosts.push(host);
    return host;
  }

  /**
   * The main plugin host, started with empty settings; after a crash, a fresh one (a check that
   * crashed it has said so). The refusal when the plugin does not load at all.
   */
  main(): Promise<MainHost | CxError> {
    const current = this.mainHost;
    if (current && this.mainStopped) return current;
    if (current) {
      return current.then((m) => (m instanceof Error || m.host.alive || !m.started ? m : (this.mainHost = this.startMain())));
    }
    return (this.mainHost = this.startMain());
  }

  /** The first main host's outcome (its refusal, or its ready line and start), once it was opened. */
  async first(): Promise<MainHost | CxError> {
    await this.main();
    return this.firstMain!;
  }

  private async startMain(): Promise<MainHost | CxError> {
    const host = await this.open();
    if (!(host instanceof CheckHost)) return (this.firstMain ??= host);
    if (!this.describedValue) {
      const described = checkManifest(host.ready.manifest);
      if (described.ok) this.describedValue = described.manifest;
    }
    const start = await host.start({}, this.scratch, this.timeouts.startMs);
    const started = start.kind === "reply" && start.reply.ok;
    this.starts.push({ situation: this.firstMain ? "a fresh plugin host, after a crash" : "empty settings", settings: {}, answer: start });
    if (started) this.mainStartedAt = performance.now();
    const main: MainHost = { host, start, started };
    this.firstMain ??= main;
    return main;
  }

  /** The main host, only when its start succeeded; else why the calls cannot be made. */
  async running(): Promise<CheckHost | string> {
    if (this.runnable !== null) return this.runnable;
    const main = await this.main();
    if (main instanceof Error) return `the plugin did not load (see ${loadCheck(this)})`;
    if (!main.started) return "its start failed with empty settings (see start)";
    return main.host;
  }

  /** Runs `make` once for the run; every later caller gets the same promise. */
  memo<T>(key: string, make: () => Promise<T>): Promise<T> {
    let found = this.memos.get(key) as Promise<T> | undefined;
    if (!found) {
      found = make();
      this.memos.set(key, found);
    }
    return found;
  }

  /** Records the processes in every open plugin host's subtree (the spawning checks judge them). */
  sampleAll(): void {
    for (const host of this.hosts) host.sample();
  }

  /** Stops and ends every plugin host still open (their stops are recorded, not judged). */
  async closeAll(): Promise<void> {
    for (const host of this.hosts) {
      const answer = await host.close(true, this.timeouts.stopMs);
      if (answer) this.stops.push({ situation: "at the end of the check", answer });
    }
  }

  /** Lets the main host, when it polls, run long enough since its start for ten polls, so what poll answers is seen. */
  async pollWindow(): Promise<void> {
    const main = this.mainHost && !this.mainStopped ? await this.mainHost : null;
    if (!main || main instanceof Error || !main.started || !main.host.alive || !main.host.ready.exports.includes("poll")) return;
    const left = this.mainStartedAt + this.pollMs * 10 - performance.now();
    if (left > 0) await Bun.sleep(left);
  }

  /** Stops the main host now (the stop check), after a poll window when it polls; its stop's answer. */
  async stopMain(): Promise<Answer | null> {
    const main = this.mainHost ? await this.mainHost : null;
    if (!main || main instanceof Error) {
      this.mainStopped = true;
      return null;
    }
    await this.pollWindow();
    this.mainStopped = true;
    main.host.sample();
    const answer = await main.host.close(true, this.timeouts.stopMs);
    if (answer) this.stops.push({ situation: main.started ? "after a successful start" : "after a failed start", answer });
    return answer;
  }
}

export function firstLine(text: string): string {
  return text.split("\n")[0]!;
}

/** The check that reports a failed load: the handshake's for a library, describe's for a module (which has no handshake). */
export function loadCheck(ctx: { kind: PluginKind }): string {
  return profileOf(ctx.kind).handshake ? "handshake" : "describe";
}
