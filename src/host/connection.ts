/**
 * The protocol connection to one plugin host (SPEC §5), over any transport: wait for the startup
 * line, send requests and correlate replies by id (calls.ts), route events, keep the tail of its
 * stderr for crash messages, prove what it registers, and end it. Every deadline lives here, in
 * the parent (SPEC §2). The host's end is observed once, here, and told to one listener before any
 * pending call fails.
 */
import * as v from "valibot";
import { CxError } from "../errors.ts";
import { preview } from "../protocol/issues.ts";
import { checkDescribed, type Manifest } from "../protocol/manifest.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import { HOST_DEFAULTS, settleHostSettings } from "../protocol/host-settings.ts";
import { type KindProfile, profileOf } from "../kinds/index.ts";
import {
  EventSchema,
  type EXPORT_OF,
  type Notice,
  parseReply,
  type Reply,
  type Request,
  type StartupLine,
  StartupLineSchema,
  type WireEvent,
} from "../protocol/wire.ts";
import { Calls, callsInFlightHere, type RequestOptions, requestLine } from "./calls.ts";
import { ChildTransport } from "./child-transport.ts";
import { crashError, StderrTail } from "./stderr-tail.ts";
import type { ConnectOptions, Ending, ProcessHooks, SpawnOptions } from "./connection-options.ts";
import { ReplySpin, parentSpinUs } from "./reply-spin.ts";
import type { Line } from "./lines.ts";
import { ReadCap } from "./read-cap.ts";
import type { ExitInfo, Transport, TransportSink } from "./transport.ts";
import { PluginText } from "./plugin-text.ts";
import { codeForRefusal, describeRequest, type RequestBody } from "./connection-words.ts";

export type { CallEvent, RequestOptions } from "./calls.ts";
export type { ExitInfo } from "./transport.ts";
export type { SealedDependency } from "./child-transport.ts";
export type { ConnectOptions, Ending, ProcessHooks, SpawnOptions } from "./connection-options.ts";

/** The host settings' defaults (protocol/host-settings.ts), and how much of its stderr a crash message keeps. */
export const DEFAULTS = { ...HOST_DEFAULTS, stderrTailLines: 30 };

type AnyBody = Request extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;
type NoticeBody = Extract<AnyBody, { kind: Notice["kind"] }>;

/** An open connection: the host's startup line, and the manifest it described, checked. */
export interface Opened {
  connection: Connection;
  ready: Extract<StartupLine, { ready: true }>;
  manifest: Manifest;
}

export class Connection {
  readonly label: string;
  readonly kind: PluginKind;
  /** What this kind of plugin calls each request, and the hints for its refusals. */
  readonly profile: KindProfile;
  /** Settles once the host has ended and what it left has been ended too. */
  readonly exited: Promise<ExitInfo>;
  /** When it was spawned, when each startup step began, when it was ready (performance.now()). */
  readonly timings: { spawnAt: number; phases: { name: string; at: number }[]; readyAt: number } = { spawnAt: performance.now(), phases: [], readyAt: 0 };
  private readonly transport: Transport;
  private readonly hooks: ProcessHooks;
  /** The function each request calls in the plugin, for messages. */
  private readonly exportNames: typeof EXPORT_OF;
  private readonly calls: Calls;
  private readonly readCap: ReadCap;
  private readonly outbox: string[] = [];
  /** The outbox holds a call's request, not only notices: only a call's reply is worth a spin. */
  private outboxHasCall = false;
  /** This side's spin (reply-spin.ts); null when the session turned spinning off. */
  private readonly replySpin: ReplySpin | null;
  /** Its last lines on stderr and the fault the runtime reported, for a crash's message. */
  private readonly tail = new StderrTail(DEFAULTS.stderrTailLines);
  /** Redacts every text the host sends, as it arrives, and answers its requests for secrets. */
  private readonly text: PluginText;
  private phase = "startup";
  private ending: Ending | null = null;
  private endListener: ((ending: Ending) => void) | null = null;
  private closing = false;
  private startup: ((line: StartupLine | CxError) => void) | null = null;

  private constructor(connect: (sink: TransportSink) => Transport, options: ConnectOptions) {
    this.label = options.label;
    this.profile = options.profile ?? profileOf(options.kind);
    this.kind = this.profile.kind;
    this.hooks = options;
    this.exportNames = this.profile.exports;
    this.text = new PluginText(options.secrets);
    this.calls = new Calls({
      label: options.label,
      poolCap: options.poolCap ?? this.profile.poolCap,
      stuckMs: options.stuckMs ?? DEFAULTS.stuckMs,
      send: (line) => this.write(line, true),
      onAbandon: (call, error) => this.alive && this.send({ kind: "cancel", call, reason: error.code }),
    });
    this.readCap = new ReadCap(options.label, this.calls, () => void this.kill());
    const spinUs = parentSpinUs(options.spinUs);
    this.replySpin = spinUs > 0 ? new ReplySpin(spinUs) : null;
    this.transport = connect({
      onLine: (line) => this.onLine(line),
      onStderr: (line) => this.onStderr(line),
      onBroken: (why) => this.hooks.onLog?.(4, why),
      limits: this.readCap.limits,
    });
    const host = this.transport.process;
    if (host) this.hooks.onSpawn?.(host);
    this.exited = this.transport.exited.then(async (exit) => {
      this.ending = { exit, hadPending: this.calls.waiting > 0 };
      this.endListener?.(this.ending);
      // Calls cut short by an end we asked for were stopped; stop itself, if it was running, crashed.
      this.calls.failAll((what) => this.readCap.broken ?? (this.closing && what !== this.exportNames.stop ? this.stoppedError(what) : this.crashError(exit, what)));
      // What the plugin registered, and what it left in the host's group, dies with the host (the transport's).
      // (Released whether or not anyone listens: `onGone?.(await …)` would skip the call without a listener.)
      const gone = await this.transport.release(DEFAULTS.graceMs);
      this.hooks.onGone?.(gone);
      return exit;
    });
  }

  /** Spawns a plugin host as a child process and waits for its startup line (see open). */
  static async spawn(options: SpawnOptions): Promise<Opened> {
    const host = options.host ?? settleHostSettings(options);
    const opened = await Connection.open((sink) => new ChildTransport({
      command: options.hostCommand,
      library: options.library,
      libraryBytes: options.libraryBytes,
      dependencies: options.dependencies,
      label: options.label,
      profile: options.profile ?? profileOf(options.kind),
      cwd: options.cwd,
      host,
      check: options.check,
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    }, sink), { ...options, poolCap: host.poolCap ?? undefined, stuckMs: host.stuckMs, spinUs: host.spinUs, startupMs: host.startupMs });
    const pid = opened.connection.pid;
    if (pid !== null) options.sandbox?.started?.(pid); // ready: its rlimits are in force
    return opened;
  }

  /**
   * Speaks the protocol over `connect`'s transport and waits for the startup line, whose manifest
   * it checks (a native host does not validate it: protocol/manifest.ts, checkDescribed).
   */
  static async open(connect: (sink: TransportSink) => Transport, options: ConnectOptions): Promise<Opened> {
    const host = new Connection(connect, options);
    const startupMs = options.startupMs ?? DEFAULTS.startupMs;
    const line = await new Promise<StartupLine | CxError>((resolve) => {
      const timer = setTimeout(() => {
        resolve(
          new CxError("E_TIMEOUT", `plugin '${host.label}' did not become ready within ${startupMs / 1000} s (it was in ${host.phase})`, {
            hint: "a library constructor or cxagent_plugin_describe is blocking; what the plugin wrote may say why",
            next: { do: "see-output", plugin: host.label },
          }),
        );
      }, startupMs);
      host.startup = (value) => {
        clearTimeout(timer);
        resolve(value);
      };
      host.whenEnded(({ exit }) => {
        clearTimeout(timer);
        resolve(
          crashError(host.label, exit, `during ${host.phase}`, host.tail, "what the plugin wrote may say why"),
        );
      });
    });
    if (line instanceof Error) {
      await host.kill();
      throw line;
    }
    if (!line.ready) {
      await host.kill();
      throw new CxError(codeForRefusal(line.reason), `plugin '${host.label}' was refused: ${line.error}`, {
        hint: host.profile.refusalHint(line.reason),
      });
    }
    const described = checkDescribed(line, host.profile.described, options.expected);
    if (!described.ok) {
      await host.kill();
      throw new CxError("E_MANIFEST", `plugin '${host.label}' was refused: ${described.error}`, {
        hint: host.profile.refusalHint("manifest"),
      });
    }
    host.endListener = null; // the startup's listener; the plugin handle takes over
    return { connection: host, ready: line, manifest: described.manifest };
  }

  get alive(): boolean {
    return this.ending === null;
  }

  /** The plugin host's pid, when it is a process. */
  get pid(): number | null {
    return this.transport.process?.pid ?? null;
  }

  /**
   * Tells `listener` once, when the host ends, before any pending call fails: at once if it has
   * ended already. One listener at a time (the plugin handle's).
   */
  whenEnded(listener: (ending: Ending) => void): void {
    if (this.ending) listener(this.ending);
    else this.endListener = listener;
  }

  /**
   * Sends one request and waits for its reply, its deadline, its cancellation, or the host's end
   * (see Calls for the limit on calls in native code). A stop is never held back by that limit.
   */
  request(body: RequestBody, options: RequestOptions = {}): Promise<Reply> {
    const what = describeRequest(body, this.exportNames);
    if (this.ending) return Promise.reject(this.crashError(this.ending.exit, what));
    if (this.closing && body.kind !== "stop") {
      return Promise.reject(new CxError("E_STOPPED", `plugin '${this.label}' is stopping; ${what} was not sent`));
    }
    return this.calls.start(body, what, options, body.kind === "stop");
  }

  /** A request that gets no reply. */
  private send(body: NoticeBody) {
    this.write(requestLine(this.calls.takeId(), body));
  }

  /**
   * Requests made in the same turn of the event loop go out in one write: every write wakes a
   * thread of the plugin host, and on a VM a wake-up costs more than the write itself.
   */
  private write(line: string, isCall = false) {
    this.outbox.push(line);
    this.outboxHasCall ||= isCall;
    if (this.outbox.length > 1) return;
    // Alone, a request goes out at once; with calls in flight, replies keep arriving, so waiting
    // for the event loop's turn collects the requests they trigger into one write.
    if (this.calls.inFlight > 1) setImmediate(() => this.flushOutbox());
    else queueMicrotask(() => this.flushOutbox());
  }

  private flushOutbox() {
    const text = this.outbox.length === 1 ? this.outbox[0]! : this.outbox.join("");
    const hasCall = this.outboxHasCall;
    this.outbox.length = 0;
    this.outboxHasCall = false;
    this.transport.send(text);
    // The one call in flight, to any plugin host of this process: wait for its reply awake,
    // briefly, where that pays (reply-spin.ts). With more out, the event loop has other replies
    // to handle: 8 plugins with a call each ran 0.73x the calls/s of spinning off when only this
    // host's calls were counted.
    const spin = this.replySpin;
    if (spin && hasCall && callsInFlightHere() === 1 && this.transport.awaitOutput && spin.wanted()) {
      spin.record(this.transport.awaitOutput(spin.budgetNs));
    }
  }

  /**
   * Ends the host gracefully: stop (bounded), close its input, wait, then SIGTERM and SIGKILL to
   * its process group. Returns the error stop produced, if any; never throws.
   */
  async shutdown(options: { stopMs?: number; graceMs?: number; sendStop?: boolean } = {}): Promise<CxError | null> {
    let stopError: CxError | null = null;
    if (this.alive && options.sendStop !== false && !this.closing) {
      this.closing = true;
      try {
        const reply = await this.request({ kind: "stop" }, { timeoutMs: options.stopMs ?? DEFAULTS.stopMs });
        if (!reply.ok) {
          stopError = reply.fault
            ? new CxError("E_BAD_REPLY", `plugin '${this.label}': ${reply.error}`)
            : new CxError("E_PLUGIN_FAILED", `plugin '${this.label}': ${this.exportNames.stop} failed: ${reply.error}`);
        }
      } catch (error) {
        stopError = error as CxError;
      }
    }
    this.closing = true;
    this.transport.closeInput();
    await this.transport.end(options.graceMs ?? DEFAULTS.graceMs);
    await this.exited;
    return stopError;
  }

  /** Ends the host and its process group at once (used when startup failed or a deadline passed). */
  async kill(): Promise<void> {
    this.closing = true;
    await this.transport.kill();
    await this.exited;
  }

  private crashError(exit: ExitInfo, what: string): CxError {
    return crashError(this.label, exit, `while ${what} was running`, this.tail, "the next call to it starts a fresh plugin host; what the plugin wrote may say why it crashed");
  }

  /** A call still running when the host was ended on purpose (stop, restart, a deadline at startup). */
  private stoppedError(what: string): CxError {
    return new CxError("E_STOPPED", `plugin '${this.label}' was stopped while ${what} was running; the call was abandoned`);
  }

  private onLine(line: Line) {
    if (line.cut > 0) {
      this.readCap.ended(line, (text) => this.hooks.onLog?.(4, text));
    } else if (line.text) {
      this.dispatch(line.text);
    }
  }

  private onStderr(line: Line) {
    const text = this.text.line(line.cut ? `${line.text}… [${line.cut} more bytes]` : line.text);
    this.tail.accept(text);
    this.hooks.onOutput?.(text);
  }

  private dispatch(text: string) {
    let message: Record<string, unknown>;
    try {
      message = this.text.message(JSON.parse(text));
    } catch {
      this.hooks.onLog?.(4, `the plugin host wrote a line that is not JSON: ${preview(this.text.line(text))}`);
      return;
    }
    if ("event" in message) return this.onEvent(message);
    if ("ready" in message) {
      this.timings.readyAt = performance.now();
      const parsed = v.safeParse(StartupLineSchema, message);
      this.startup?.(parsed.success ? parsed.output : new CxError("E_INTERNAL", `the plugin host sent a malformed startup line: ${preview(text)}`));
      return;
    }
    const reply = parseReply(message);
    if (!reply) {
      this.hooks.onLog?.(4, `the plugin host sent a malformed reply: ${preview(this.text.line(text))}`);
      return;
    }
    const held = this.text.end(reply.id); // a stream's held tail precedes its reply
    if (held) this.calls.event(reply.id, { event: "stream", text: held });
    this.calls.settle(reply);
  }

  private onEvent(message: Record<string, unknown>) {
    const parsed = v.safeParse(EventSchema, message);
    if (!parsed.success) return; // a report the host cannot read costs that report only
    const event: WireEvent = parsed.output;
    switch (event.event) {
      case "phase":
        this.timings.phases.push({ name: event.name, at: performance.now() });
        this.phase = this.profile.words.phases[event.name] ?? event.name;
        return;
      case "submit":
        this.hooks.onSubmit?.(event);
        return;
      case "child":
        this.register(event.pid, event.ack);
        return;
      case "log":
        if (event.id === 0) {
          this.hooks.onLog?.(event.level, event.text);
          return;
        }
        this.calls.event(event.id, { event: "log", level: event.level, text: event.text });
        return;
      case "progress":
        this.calls.event(event.id, { event: "progress", percent: event.percent, text: event.text });
        return;
      case "stream": {
        const text = this.text.stream(event.id, event.text);
        if (text) this.calls.event(event.id, { event: "stream", text });
        return;
      }
      case "secret":
        void this.text.answer(event.name, event.seq).then(({ body, log }) => {
          if (log) this.hooks.onLog?.(3, log);
          if (this.alive) this.send(body);
        });
        return;
      case "check":
        this.hooks.onCheck?.(event);
        return;
    }
  }

  /**
   * A registration. The line may come from anything that can write to the protocol pipe, plugin
   * code included: only what /proc shows counts (the line's startTime is not even read).
   */
  private register(pid: number, ack: number | undefined) {
    try {
      const proof = this.transport.adopt(pid);
      if (proof.ok) {
        this.hooks.onChild?.(proof.process);
      } else {
        this.hooks.onLog?.(3, `register_child(${pid}) was refused: ${proof.reason}; nothing was recorded`);
      }
    } finally {
      if (ack) this.send({ kind: "ack", seq: ack });
    }
  }
}
