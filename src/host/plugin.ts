/**
 * A loaded plugin, as a session and a script see it: its manifest, and calls that survive its
 * crashes. A plugin host that dies fails its pending calls at once; the next call starts a fresh
 * one (spawn, handshake, describe, attach, start) unless the plugin has crashed too often, after
 * which it stays quarantined for the session (SPEC §12).
 */
import { CxError, isCxError } from "../errors.ts";
import { didYouMean } from "../suggest.ts";
import type { Manifest, Tool } from "../protocol/manifest.ts";
import { CONTRACT_CURRENT } from "../protocol/manifest.ts";
import type { CommandResult, JobResult, Submit } from "../protocol/result.ts";
import { Submits } from "./submits.ts";
import { decide, GATE_MS, type GateAnswer, type GateDecision } from "./gate.ts";
import { settleLease, settlePermission } from "./permit.ts";
import { LeasePool } from "./lease-pool.ts";
import type { SandboxDeclaration } from "../protocol/sandbox.ts";
import { hiddenToolError, OPEN_POLICY, type ToolPolicy } from "./tool-policy.ts";
import type { Reply } from "../protocol/wire.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import { type KindProfile, profileOf } from "../kinds/index.ts";
import { Connection, type ProcessHooks, type RequestOptions } from "./connection.ts";
import { gateDeadline, gateLateWords, invokeDeadline } from "./deadline.ts";
import { ArgumentsCheck } from "./arguments.ts";
import { OutputCheck } from "./output-schema.ts";
import { CallOutputs, withReferences } from "./outputs.ts";
import { commandResult, invokeResult } from "./replies.ts";
import type { InvokeOptions, PluginChange, PluginSpec } from "./plugin-spec.ts";
import { refuseEchoedMarker } from "../secrets/echo.ts";

export type { AcceptManifest, GrantStore, InvokeOptions, PluginChange, PluginEventHooks, PluginSpec } from "./plugin-spec.ts";
export { requireObject } from "./arguments.ts";

export const CRASH_BUDGET = { crashes: 3, windowMs: 5 * 60_000 };

export class Plugin {
  readonly name: string;
  readonly library: string;
  private readonly spec: PluginSpec;
  private readonly hooks: ProcessHooks;
  private manifestValue: Manifest;
  private connection: Connection | null = null;
  private starting: Promise<Connection> | null = null;
  private readonly crashes: number[] = [];
  private readonly submitted: Submits;
  private quarantine: CxError | null = null;
  private readonly changeListeners = new Set<(change: PluginChange) => void>();
  private readonly arguments: ArgumentsCheck;
  private readonly outputCheck = new OutputCheck();
  private readonly outputs: CallOutputs;
  private commandTurn: Promise<void> = Promise.resolve();
  private stopped = false;
  private leasePool: LeasePool | null = null;
  private deliberate = false;
  private exportsValue: string[] = [];
  /** Default invoke deadlines the plugin declares for its tools (ms), used when a call gives none. */
  private deadlinesValue = new Map<string, number>();
  private aboutValue: string | null = null;
  private timingsValue = { spawnAt: 0, phases: [] as { name: string; at: number }[], readyAt: 0, acceptedAt: 0, startedAt: 0 };

  private constructor(spec: PluginSpec, manifest: Manifest, hooks: ProcessHooks, submitted: Submits) {
    this.spec = spec;
    this.submitted = submitted;
    this.name = spec.name;
    this.library = spec.library;
    this.manifestValue = manifest;
    this.hooks = hooks;
    this.arguments = new ArgumentsCheck((level, text) => hooks.onLog?.(level, text));
    this.outputs = new CallOutputs(spec);
  }

  /**
   * Starts a plugin: spawns its host, has `spec.accept` check what it describes, and runs start.
   * A session does this (Session.load); not part of the library's API.
   * @internal
   */
  static async start(spec: PluginSpec, hooks: ProcessHooks): Promise<Plugin> {
    const submitted = new Submits(spec.name, (level, text) => hooks.onLog?.(level, text));
    const routed: ProcessHooks = { ...hooks, onSubmit: (raw) => submitted.receive(raw) };
    const { connection, manifest, exports, deadlines, about, acceptedAt, startedAt } = await Plugin.launch(spec, routed, null);
    const plugin = new Plugin(spec, manifest, routed, submitted);
    submitted.open(manifest.client);
    plugin.exportsValue = exports;
    plugin.deadlinesValue = new Map(deadlines.filter((d) => manifest.tools.some((t) => t.name === d.tool)).map((d) => [d.tool, d.ms]));
    plugin.aboutValue = about;
    plugin.timingsValue = { ...connection.timings, acceptedAt, startedAt };
    plugin.adopt(connection);
    return plugin;
  }

  private static async launch(spec: PluginSpec, hooks: ProcessHooks, previous: Manifest | null) {
    const { connection, ready, manifest: described } = await Connection.spawn({
      hostCommand: spec.hostCommand,
      library: spec.library,
      libraryBytes: spec.libraryBytes,
      dependencies: spec.dependencies,
      label: spec.name,
      profile: spec.profile,
      cwd: spec.cwd,
      expected: spec.expected,
      host: spec.host,
      secrets: spec.secrets,
      ...(spec.sandbox ? { sandbox: spec.sandbox } : {}),
      ...hooks,
    });
    try {
      const manifest = spec.accept(described, previous) ?? described;
      const acceptedAt = performance.now();
      const reply = await connection.request(
        { kind: "start", context: { workingDirectory: spec.cwd, settings: spec.settings ?? {}, hostContract: CONTRACT_CURRENT } },
        { timeoutMs: spec.host.startMs },
      );
      if (!reply.ok) {
        throw new CxError(reply.fault ? "E_BAD_REPLY" : "E_PLUGIN_FAILED", `plugin '${spec.name}' failed to start: ${reply.error}`, {
          hint: "check the plugin's settings in config.json, and what it wrote",
          next: { do: "see-output", plugin: spec.name },
        });
      }
      return { connection, manifest, exports: ready.exports, deadlines: ready.deadlines ?? [], about: ready.about ?? null, acceptedAt, startedAt: performance.now() };
    } catch (error) {
      await connection.shutdown({ stopMs: spec.host.stopMs, sendStop: isCxError(error, "E_PLUGIN_FAILED") });
      throw error;
    }
  }

  /**
   * When the first plugin host was spawned, each startup phase it reported (dlopen, handshake,
   * describe, attach), when it was ready, when its manifest was accepted and when start answered
   * (performance.now() timestamps).
   */
  get timings() {
    return this.timingsValue;
  }

  get manifest(): Manifest {
    return this.manifestValue;
  }

  /** The tools a model sees and may call: the manifest's, less those the policy hides. */
  get tools(): readonly Tool[] {
    const { hidden } = this.policy;
    return hidden.size ? this.manifestValue.tools.filter((t) => !hidden.has(t.name)) : this.manifestValue.tools;
  }

  /** What this session lets the plugin's tools do: hidden, asked on every call, limits; and why. */
  get policy(): ToolPolicy {
    return this.spec.policy ?? OPEN_POLICY;
  }

  /** Which ABI the library speaks. */
  get kind(): PluginKind {
    return this.profile.kind;
  }

  /** Its kind's profile (kinds/): the words and defaults of that kind. */
  get profile(): KindProfile {
    return this.spec.profile ?? profileOf(undefined);
  }

  /** The default deadline (ms) of a tool's invoke, when the plugin declares one (a Cortex timeout_secs). */
  deadlineOf(tool: string): number | null {
    return this.deadlinesValue.get(tool) ?? null;
  }

  /** What the plugin says it is, in a sentence, when it says (a Cortex plugin_info's description). */
  get about(): string | null {
    return this.aboutValue;
  }

  /** What its load found odd but not wrong, in sentences (a Cortex plugin_info naming it otherwise than its manifest.toml). */
  get warnings(): readonly string[] {
    return this.spec.warnings ?? [];
  }

  /** The kernel layers its hosts run under (src/sandbox/), or null: unconfined (it declares no sandbox). */
  get sandboxLayers(): readonly string[] | null {
    return this.spec.sandbox?.layers ?? null;
  }

  /** Optional exports the library has: "poll", "command", "attach". */
  get exports(): readonly string[] {
    return this.exportsValue;
  }

  /** The pid of the current plugin host, or null when none runs. */
  get pid(): number | null {
    return this.connection?.alive ? this.connection.pid : null;
  }

  get isQuarantined(): boolean {
    return this.quarantine !== null;
  }

  /** A tool the plugin declares and the policy does not hide (E_UNKNOWN_TOOL, E_TOOL_HIDDEN). */
  tool(name: string): Tool {
    const tool = this.manifestValue.tools.find((t) => t.name === name);
    if (!tool) {
      const names = this.tools.map((t) => t.name);
      throw new CxError("E_UNKNOWN_TOOL", `plugin '${this.name}' has no tool '${name}'${didYouMean(name, names)}`, { hint: `its tools: ${names.join(", ") || "none"}` });
    }
    // Refused here, before anything is sent: a hidden tool's gate and invoke never reach the plugin.
    const hidden = this.policy.hidden.get(name);
    if (hidden) throw hiddenToolError(this.name, name, hidden);
    return tool;
  }

  /** The permission decision for a call, without making it (SPEC §7): ceiling, "dynamic" narrowing, stored grants. */
  async gate(tool: string, args: unknown = {}): Promise<GateDecision> {
    const declared = this.tool(tool);
    refuseEchoedMarker(this.name, `tool '${tool}'`, args);
    return this.decideGate(declared, this.arguments.check(declared, this.outputs.substitute(args)));
  }

  /** The decision for arguments checked already (ArgumentsCheck): they are not checked twice. */
  private async decideGate(declared: Tool, args: Record<string, unknown>): Promise<GateDecision> {
    const answer = declared.gated === "dynamic" ? await this.askGate(declared.name, args) : null;
    return settleLease(this.name, this.spec.leases, decide(this.name, declared, args, answer, (rule) => this.spec.grants.has(rule), this.policy.asked.get(declared.name) ?? null));
  }

  /** Runs a call on the host started with exactly its lease (host/lease-pool.ts). */
  private leased(sandbox: SandboxDeclaration, send: (connection: Connection) => Promise<Reply>): Promise<Reply> {
    if (this.stopped || this.quarantine) return this.running().then(send); // refused there: E_STOPPED, E_QUARANTINED
    const launch = async (spec: PluginSpec) => (await Plugin.launch(spec, this.hooks, this.manifestValue)).connection;
    this.leasePool ??= new LeasePool(this.spec, launch, { onCrash: () => this.noteCrash(), onLog: (level, text) => this.hooks.onLog?.(level, `${this.name}: ${text}`) });
    return this.leasePool.run(sandbox, send);
  }

  private async askGate(tool: string, args: Record<string, unknown>): Promise<GateAnswer> {
    const limit = this.policy.gateTimeout;
    const deadline = gateDeadline(this.spec.gateMs, GATE_MS, limit);
    try {
      const reply = await this.call((connection) => connection.request({ kind: "gate", tool, arguments: args }, { timeoutMs: deadline.ms }));
      if (!reply.ok) return { kind: "failed", why: reply.error };
      return "gate" in reply ? { kind: "value", value: reply.gate } : { kind: "null" };
    } catch (error) {
      if (!(error instanceof CxError) || error.code === "E_QUARANTINED" || error.code === "E_STOPPED") throw error;
      const why = error.code === "E_TIMEOUT" ? gateLateWords(deadline, limit) : error.code === "E_CRASHED" ? `the plugin crashed: ${error.message.split("\n")[0]}` : error.message;
      return { kind: "failed", why };
    }
  }

  /** Runs a tool: its JobResult, also for success:false and for a denied call (which never reached the plugin). */
  async invoke(tool: string, args: unknown = {}, options: InvokeOptions = {}): Promise<JobResult> {
    const declared = this.tool(tool);
    refuseEchoedMarker(this.name, `tool '${tool}'`, args);
    const given = this.outputs.prepare(options, args);
    const argumentsObject = this.arguments.check(declared, given.args);
    let lease: SandboxDeclaration | undefined;
    if (declared.gated !== false || this.policy.asked.has(tool)) {
      const decision = withReferences(await this.decideGate(declared, argumentsObject), given.references);
      const denied = await settlePermission({ plugin: this.name, tool, arguments: argumentsObject, decision, references: given.references }, options.permission ?? this.spec.permission, this.spec.grants);
      if (denied) return denied;
      lease = decision.lease;
    }
    if (options.signal?.aborted) throw new CxError("E_CANCELLED", `plugin '${this.name}': ${tool} was cancelled before it started`);
    const started = performance.now();
    const deadline = invokeDeadline(options, this.name, tool, this.deadlineOf(tool), this.policy.invokeTimeout);
    const request: RequestOptions = { ...deadline, signal: options.signal, onEvent: options.onEvent, readCap: given.readCap, spill: given.spill };
    const send = (connection: Connection) => connection.request({ kind: "invoke", tool, arguments: argumentsObject }, request);
    const reply = await this.outputs.guard(given, lease ? this.leased(lease, send) : this.call(send));
    const elapsed = performance.now() - started;
    return this.outputs.deliver(this.outputCheck.check(this.name, declared, invokeResult(this.name, this.profile, reply, tool, elapsed)), tool, given);
  }

  /** A fresh plugin host (the way out of calls stuck in native code, which cannot be interrupted); pending calls fail. */
  async restart(): Promise<void> {
    if (this.stopped) throw new CxError("E_STOPPED", `plugin '${this.name}' has been stopped`);
    const old = this.connection;
    this.connection = null;
    this.deliberate = true;
    if (old) await old.kill();
    await this.running();
  }

  /** Runs one of its commands as a person typed it (`text`: all after the name); reports reach `onEvent`. */
  async command(name: string, text = "", options: { onEvent?: InvokeOptions["onEvent"]; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CommandResult> {
    if (!this.manifestValue.commands.some((c) => c.name === name)) {
      const names = this.manifestValue.commands.map((c) => c.name);
      throw new CxError("E_UNKNOWN_COMMAND", `plugin '${this.name}' declares no command '${name}'${didYouMean(name, names)}`, { hint: `its commands: ${names.join(", ") || "none"}` });
    }
    refuseEchoedMarker(this.name, `command '${name}'`, text);
    const reply = await this.oneCommandAtATime(() => this.call((connection) => connection.request({ kind: "command", name, text: text.trim() }, options)));
    return commandResult(this.name, this.profile, reply, name);
  }

  /**
   * Contracts 2 and 3 promised that cxagent_plugin_command is never called while another call of
   * it runs, and plugins were written to that promise: for them, commands wait their turn (a
   * command abandoned by its deadline or signal gives up its turn, as its native call cannot be
   * interrupted). Contract 4 says commands may run concurrently, and they do.
   */
  private oneCommandAtATime<T>(run: () => Promise<T>): Promise<T> {
    if (this.manifestValue.pluginContract > 3) return run();
    const turn = this.commandTurn.then(run, run);
    this.commandTurn = turn.then(() => undefined, () => undefined);
    return turn;
  }

  /** Calls `listener` when the plugin is quarantined or its host restarted (cxagent mcp: list_changed); returns the unsubscribe. */
  onChange(listener: (change: PluginChange) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private changed(change: PluginChange) {
    for (const listener of [...this.changeListeners]) {
      try {
        listener(change);
      } catch (error) {
        this.hooks.onLog?.(4, `a change listener of '${this.name}' threw: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Calls `listener` with each piece of work the plugin submits; returns the unsubscribe. */
  onSubmit(listener: (submit: Submit) => void): () => void {
    return this.submitted.on(listener);
  }

  /** The plugin's submits as an async iterator, until `signal` aborts or the plugin stops. */
  submits(signal?: AbortSignal): AsyncGenerator<Submit> {
    return this.submitted.iterate(signal);
  }

  /** Stops the plugin: stop (bounded), then the process ends; a host starting meanwhile too (relaunch sees `stopped`). Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.submitted.end();
    await this.leasePool?.stop();
    const connection = this.connection;
    this.connection = null;
    await this.starting?.catch(() => null);
    if (connection) await this.end(connection);
  }

  private end(connection: Connection): Promise<void> {
    return connection.shutdown({ stopMs: this.spec.host.stopMs }).then((error) => void (error && this.hooks.onLog?.(3, error.message)));
  }

  /** Runs one request on a live plugin host, starting a fresh one after a crash. @internal */
  protected call(send: (connection: Connection) => Promise<Reply>): Promise<Reply> {
    const live = this.connection;
    if (live?.alive && !this.stopped && !this.quarantine) return send(live);
    return this.running().then(send);
  }

  private async running(): Promise<Connection> {
    if (this.stopped) throw new CxError("E_STOPPED", `plugin '${this.name}' has been stopped`);
    if (this.quarantine) throw this.quarantine;
    if (this.connection?.alive) return this.connection;
    this.starting ??= this.relaunch().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async relaunch(): Promise<Connection> {
    this.hooks.onLog?.(this.deliberate ? 2 : 3, `starting a new plugin host for '${this.name}'${this.deliberate ? "" : " after the last one ended"}`);
    this.deliberate = false;
    const { connection } = await Plugin.launch(this.spec, this.hooks, this.manifestValue);
    if (this.stopped) throw (await this.end(connection), new CxError("E_STOPPED", `plugin '${this.name}' has been stopped`));
    this.adopt(connection);
    this.changed({ kind: "restarted" });
    return connection;
  }

  /**
   * Takes over a plugin host: its end is observed here, once, before its pending calls fail. An
   * end nobody asked for (no stop, no restart) is a crash, whatever the exit code.
   */
  private adopt(connection: Connection) {
    this.connection = connection;
    connection.whenEnded(({ exit, hadPending }) => {
      if (this.connection !== connection || this.stopped) return;
      if (!hadPending) {
        this.hooks.onLog?.(
          4,
          `the plugin host of '${this.name}' ended unexpectedly (${exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`}) while no call was waiting on it — in cxagent_plugin_poll or a thread of the plugin's own; the next call starts a new one`,
        );
      }
      this.noteCrash();
    });
  }

  private noteCrash() {
    const now = Date.now();
    this.crashes.push(now);
    while (this.crashes.length && this.crashes[0]! < now - CRASH_BUDGET.windowMs) this.crashes.shift();
    if (this.crashes.length >= CRASH_BUDGET.crashes && !this.quarantine) {
      this.quarantine = new CxError(
        "E_QUARANTINED",
        `plugin '${this.name}' crashed ${this.crashes.length} times within ${CRASH_BUDGET.windowMs / 60_000} minutes and is quarantined for the rest of this session`,
        { hint: "fix the plugin (what it wrote may say why it crashes), then start a new session", next: { do: "see-output", plugin: this.name } },
      );
      this.hooks.onLog?.(4, this.quarantine.message);
      this.changed({ kind: "quarantined", error: this.quarantine });
    }
  }
}
