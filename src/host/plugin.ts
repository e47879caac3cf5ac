/**
 * A loaded plugin, as a session and a script see it: its manifest, and calls that survive its
 * crashes. A plugin host that dies fails its pending calls at once; the next call starts a fresh
 * one (spawn, handshake, describe, attach, start) unless the plugin has crashed too often, after
 * which it stays quarantined for the session (SPEC §12).
 */
import { CxError, isCxError } from "../errors.ts";
import { didYouMean } from "../suggest.ts";
import { ARGUMENTS_DEPTH_LIMIT, ArgumentsValidator } from "../json-schema/check.ts";
import { tooDeep } from "../protocol/contract.ts";
import { describeValue } from "../protocol/issues.ts";
import type { Manifest, Tool } from "../protocol/manifest.ts";
import { CONTRACT_CURRENT, type KnownManifest } from "../protocol/manifest.ts";
import * as v from "valibot";
import { type CommandResult, CommandResultSchema, deniedResult, type JobResult, type Submit, toJobResult } from "../protocol/result.ts";
import { Submits } from "./submits.ts";
import { preview } from "../protocol/issues.ts";
import { decide, GATE_MS, type GateAnswer, type GateDecision, type PermissionAnswer, type PermissionHandler } from "./gate.ts";
import { hiddenToolError, OPEN_POLICY, type ToolPolicy } from "./tool-policy.ts";
import type { Reply } from "../protocol/wire.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import { type KindProfile, profileOf } from "../kinds/index.ts";
import { type CallEvent, Connection, type ProcessHooks, type RequestOptions, type SealedDependency } from "./connection.ts";
import { gateDeadline, gateLateWords, invokeDeadline } from "./deadline.ts";
import type { HostSettings } from "../protocol/host-settings.ts";

export const CRASH_BUDGET = { crashes: 3, windowMs: 5 * 60_000 };

/** Where a plugin's standing "Always" grants live: the session scopes them (project, folder). */
export interface GrantStore {
  has(rule: string): boolean;
  add(rule: string): void;
}

/**
 * Whether a manifest the plugin host described may be served: `previous` is null at the first
 * start (the session compares it with the sidecar) and the manifest served so far after a restart.
 * Throws the CxError that refuses it; may return the manifest to serve instead (a Cortex plugin
 * keeps the name it was approved under).
 */
export type AcceptManifest = (described: Manifest, previous: Manifest | null) => Manifest | void;

export interface PluginSpec {
  name: string;
  /** Which kind of plugin, as its profile (kinds/): native (the default: ffi/cxagent_plugin.h), cortex, or a TypeScript/JavaScript module. */
  profile?: KindProfile;
  /** The command that starts a plugin host (see session/host-command.ts). */
  hostCommand: string[];
  /** The library the plugin host loads. */
  library: string;
  /** Its approved bytes (a module's: its folder's files); every plugin host of this plugin loads exactly these. */
  libraryBytes?: Uint8Array;
  /** Libraries from its folder it needs, with their approved bytes, in the order they are loaded. */
  dependencies?: SealedDependency[];
  settings: unknown;
  cwd: string;
  /** The grants this plugin receives and stores. */
  grants: GrantStore;
  /** Checks each manifest the plugin host describes, at the first start and at every restart. */
  accept: AcceptManifest;
  /** The manifest it should describe, checked already (its sidecar's; see KnownManifest). */
  expected?: KnownManifest;
  /**
   * Which tools are hidden (never listed, never called), which ask on every call, and the limits
   * on its calls, with the rule behind each (default: every tool, as its manifest says).
   */
  policy?: ToolPolicy;
  /** How long a gate may take before it counts as failed (default 500 ms). */
  gateMs?: number;
  /** Who decides calls that need permission when the call names nobody (default: deny). */
  permission?: PermissionHandler | PermissionAnswer;
  /**
   * Its plugin hosts' settings (pool, poll, spin, deadlines, environment, session id), settled
   * once by the session and passed whole to each host it starts (protocol/host-settings.ts).
   */
  host: HostSettings;
}

export interface InvokeOptions {
  /**
   * Decides the call when it needs permission: a function (a prompt, a policy) or a fixed answer.
   * Without one, such a call is denied by policy. "always" stores a grant when Always is offered.
   */
  permission?: PermissionHandler | PermissionAnswer;
  signal?: AbortSignal;
  /** Milliseconds before the call is abandoned with E_TIMEOUT. No deadline unless given. */
  timeoutMs?: number;
  /** Each progress report restarts the timeout, up to `maxMs` in all (default 10 × timeoutMs). */
  resetOnProgress?: boolean;
  maxMs?: number;
  onEvent?: (event: CallEvent) => void;
}

export type PluginEventHooks = ProcessHooks;

/**
 * A change in what a plugin can serve: `quarantined` (it crashed too often; its tools fail for the
 * rest of the session), or `restarted` (a fresh plugin host replaced one that ended or was
 * replaced by `restart()`; same manifest, same tools).
 */
export type PluginChange = { kind: "quarantined"; error: CxError } | { kind: "restarted" };

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
  private readonly validators = new Map<string, ArgumentsValidator>();
  private commandTurn: Promise<void> = Promise.resolve();
  private stopped = false;
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

  /**
   * The permission decision for a call, without making it (SPEC §7): the manifest's ceiling, the
   * gate's narrowing for "dynamic" tools, and whether a stored grant already allows it.
   */
  async gate(tool: string, args: unknown = {}): Promise<GateDecision> {
    const declared = this.tool(tool);
    return this.decideGate(declared, this.checkedArguments(declared, args));
  }

  /** The decision for arguments checked already (checkedArguments): they are not checked twice. */
  private async decideGate(declared: Tool, args: Record<string, unknown>): Promise<GateDecision> {
    const answer = declared.gated === "dynamic" ? await this.askGate(declared.name, args) : null;
    return decide(this.name, declared, args, answer, (rule) => this.spec.grants.has(rule), this.policy.asked.get(declared.name) ?? null);
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

  /**
   * Runs a tool. Resolves with its JobResult (also when the tool reports success:false, and when
   * permission was denied: then it never reached the plugin).
   */
  async invoke(tool: string, args: unknown = {}, options: InvokeOptions = {}): Promise<JobResult> {
    const declared = this.tool(tool);
    const argumentsObject = this.checkedArguments(declared, args);
    if (declared.gated !== false || this.policy.asked.has(tool)) {
      const denied = await this.permit(declared, argumentsObject, options.permission ?? this.spec.permission);
      if (denied) return denied;
    }
    if (options.signal?.aborted) throw new CxError("E_CANCELLED", `plugin '${this.name}': ${tool} was cancelled before it started`);
    const started = performance.now();
    const deadline = invokeDeadline(options, this.name, tool, this.deadlineOf(tool), this.policy.invokeTimeout);
    const request: RequestOptions = { ...deadline, signal: options.signal, onEvent: options.onEvent };
    const reply = await this.call((connection) => connection.request({ kind: "invoke", tool, arguments: argumentsObject }, request));
    const elapsed = performance.now() - started;
    if (!reply.ok) throw this.replyError(reply, `${tool} failed`, tool);
    if (reply.result === null || typeof reply.result !== "object" || Array.isArray(reply.result)) {
      throw new CxError("E_BAD_REPLY", `plugin '${this.name}': cxagent_plugin_invoke returned a result that is ${describeValue(reply.result)}, not a JobResult object`, {
        hint: "a result envelope is {\"ok\": true, \"result\": {\"success\": true, \"output\": {...}}}",
      });
    }
    return toJobResult(reply.result as Record<string, unknown>, elapsed);
  }

  /**
   * A call's arguments as the plugin will see them: an object, nested no deeper than any tool
   * needs, that satisfies the tool's inputSchema — checked here, for every caller, before the gate
   * or the plugin sees them. Numbers and booleans a model sent as strings (or 0/1) are coerced
   * where the schema wants them (json-schema/check.ts). A violation is E_INVALID_INPUT naming the
   * path and the rule.
   */
  private checkedArguments(tool: Tool, args: unknown): Record<string, unknown> {
    const object = requireObject(args, `arguments for ${tool.name}`);
    const deep = tooDeep(object, ARGUMENTS_DEPTH_LIMIT, "(the arguments)");
    if (deep !== null) {
      throw new CxError("E_INVALID_INPUT", `arguments for ${tool.name} are nested more than ${ARGUMENTS_DEPTH_LIMIT} levels deep (at ${preview(deep, 80)}), deeper than the plugin host reads`, {
        details: { tool: tool.name, path: deep },
      });
    }
    let validator = this.validators.get(tool.name);
    if (!validator) this.validators.set(tool.name, (validator = new ArgumentsValidator(tool.inputSchema)));
    const checked = validator.check(object);
    if (!checked.ok) {
      const n = checked.problems.length;
      throw new CxError("E_INVALID_INPUT", `arguments for ${tool.name} do not match its inputSchema: ${checked.problems.map((p) => p.message).join("; ")}`, {
        hint: `the tool's inputSchema says which arguments it takes (${n} problem${n === 1 ? "" : "s"} here)`,
        details: { tool: tool.name, problems: checked.problems },
      });
    }
    if (checked.coerced.length) this.hooks.onLog?.(1, `${tool.name}: took ${checked.coerced.join(", ")} as the type its inputSchema asks for`);
    return checked.value;
  }

  /** Settles permission for a gated call; returns the denied result, or null to go ahead. */
  private async permit(declared: Tool, args: Record<string, unknown>, permission: PermissionHandler | PermissionAnswer | undefined): Promise<JobResult | null> {
    const tool = declared.name;
    const decision = await this.decideGate(declared, args);
    if (!decision.ask || decision.granted) return null;
    if (permission === undefined) {
      return deniedResult("policy", `${tool} was not run: it needs permission (${decision.display}) and there was no one to ask`);
    }
    let answer = typeof permission === "function" ? await permission({ plugin: this.name, tool, arguments: args, decision }) : permission;
    if (answer === "always" && !decision.alwaysOffered) answer = "once";
    if (answer === "deny") return deniedResult("user", `${tool} was not run: permission was denied`);
    if (answer === "always") this.spec.grants.add(decision.rule!);
    return null;
  }

  /**
   * Replaces the plugin host with a fresh one (spawn, handshake, describe, attach, start): the way
   * out when calls are stuck in native code, which cannot be interrupted. Pending calls fail.
   */
  async restart(): Promise<void> {
    if (this.stopped) throw new CxError("E_STOPPED", `plugin '${this.name}' has been stopped`);
    const old = this.connection;
    this.connection = null;
    this.deliberate = true;
    if (old) await old.kill();
    await this.running();
  }

  /**
   * Runs one of the plugin's commands, as a person typed it: `text` is everything after the name
   * (trimmed). Reports made while it runs reach `onEvent`, like an invoke's.
   */
  async command(name: string, text = "", options: { onEvent?: InvokeOptions["onEvent"]; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CommandResult> {
    if (!this.manifestValue.commands.some((c) => c.name === name)) {
      const names = this.manifestValue.commands.map((c) => c.name);
      throw new CxError("E_UNKNOWN_COMMAND", `plugin '${this.name}' declares no command '${name}'${didYouMean(name, names)}`, { hint: `its commands: ${names.join(", ") || "none"}` });
    }
    const reply = await this.oneCommandAtATime(() => this.call((connection) => connection.request({ kind: "command", name, text: text.trim() }, options)));
    if (!reply.ok) throw this.replyError(reply, `command '${name}' failed`, name);
    if (!("command" in reply)) return { message: null, status: "reported" };
    const parsed = v.safeParse(CommandResultSchema, reply.command);
    if (!parsed.success) {
      const { command } = this.profile;
      throw new CxError("E_BAD_REPLY", `plugin '${this.name}': ${command.export} returned ${preview(JSON.stringify(reply.command))}, not {"message": string or null, "status": "reported", "changed" or "refused"}`, {
        hint: command.hint,
      });
    }
    return parsed.output;
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
    this.commandTurn = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /**
   * Calls `listener` when the plugin is quarantined or its plugin host is restarted (an adapter
   * such as `cxagent mcp` tells its clients the tool list changed); returns the unsubscribe.
   */
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

  /** Stops the plugin: stop (bounded), then the process ends. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.submitted.end();
    const connection = this.connection ?? (await this.starting?.catch(() => null)) ?? null;
    this.connection = null;
    if (!connection) return;
    const error = await connection.shutdown({ stopMs: this.spec.host.stopMs });
    if (error) this.hooks.onLog?.(3, error.message);
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

  /**
   * The error for a call the plugin answered with ok:false. Its own message often starts with the
   * tool's name already ("calc_multiply: missing b"): then it is not said twice.
   */
  private replyError(reply: Extract<Reply, { ok: false }>, what: string, subject: string): CxError {
    switch (reply.fault) {
      case "bad-reply":
        return new CxError("E_BAD_REPLY", `plugin '${this.name}': ${reply.error}`, {
          hint: this.profile.badReplyHint,
        });
      case "missing-export":
        return new CxError("E_LOAD", `plugin '${this.name}': ${reply.error}`);
      case undefined:
        return new CxError("E_PLUGIN_FAILED", `plugin '${this.name}': ${saysWho(reply.error, subject) ? "" : `${what}: `}${reply.error}`);
      default:
        return new CxError("E_INTERNAL", `plugin '${this.name}': ${reply.error}`);
    }
  }
}

/** Whether a plugin's message already starts by naming `subject` ("calc_add: …", "calc_add failed"). */
function saysWho(message: string, subject: string): boolean {
  return message.startsWith(subject) && /^[\s:,(]/.test(message.slice(subject.length));
}

export function requireObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new CxError("E_INVALID_INPUT", `${what} must be a JSON object, not ${describeValue(value)}`, {
      hint: "pass an object such as {\"a\": 2, \"b\": 3}",
    });
  }
  return value as Record<string, unknown>;
}
