/**
 * One running plugin host, seen from the parent: spawn it, wait for its startup line, send
 * requests and correlate replies by id, route events, read its stderr continuously, and end it.
 * Every deadline lives here, in the parent (SPEC §2).
 */
import type { Subprocess } from "bun";
import { CxError, type ErrorCode } from "../errors.ts";
import { preview } from "../protocol/issues.ts";
import {
  EventSchema,
  EXPORT_OF,
  LINE_CAP,
  parseReply,
  type Reply,
  type Request,
  type StartupLine,
  StartupLineSchema,
  type WireEvent,
} from "../protocol/wire.ts";
import * as v from "valibot";
import { closeSync } from "node:fs";
import { readLines } from "./lines.ts";
import { sealedCopy } from "./memfd.ts";
import { groupMayHaveMembers, groupMembers } from "../reaper/proc.ts";
import { type Target, terminate } from "../reaper/terminate.ts";
import { hostCommand } from "./self.ts";
import { Calls, type RequestOptions } from "./calls.ts";

export type { CallEvent, RequestOptions } from "./calls.ts";

export const DEFAULTS = {
  startupMs: 10_000,
  startMs: 30_000,
  stopMs: 10_000,
  graceMs: 2_000,
  poolCap: 16,
  /** A call running this long counts as stuck when deciding whether to refuse new calls. */
  stuckMs: 1_000,
  stderrLineCap: 16 * 1024,
  stderrTailLines: 30,
};

type AnyBody = Request extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;
type RequestBody = Exclude<AnyBody, { kind: "ack" }>;

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export interface ProcessHooks {
  /** A line the plugin wrote to stdout or stderr (both arrive on the host's stderr). */
  onOutput?: (text: string) => void;
  /** A log report with no call (id 0), or a message from the host itself. */
  onLog?: (level: number, text: string) => void;
  onSubmit?: (submit: { goal?: unknown; wantResult?: unknown }) => void;
  /** The plugin host was spawned (before anything else happens). */
  onSpawn?: (pid: number) => void;
  /** The plugin registered a process; it is confirmed to the plugin once this returns. */
  onChild?: (child: { pid: number; startTime: string }) => void;
  /** These processes (the host, its registered children) have ended and need no reaping. */
  onGone?: (pids: number[]) => void;
}

export interface SpawnOptions extends ProcessHooks {
  library: string;
  /** The library's approved bytes: loaded from a sealed copy of these, not from the file. */
  libraryBytes?: Uint8Array;
  /** The plugin's name, for messages. */
  label: string;
  cwd: string;
  startupMs?: number;
  poolCap?: number;
  stuckMs?: number;
  pollMs?: number;
  env?: Record<string, string | undefined>;
}

/** Waits for `promise` at most `ms`; true if it settled in time. Leaves no timer behind. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const, () => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describeRequest(body: RequestBody): string {
  if (body.kind === "invoke" || body.kind === "gate") return `${EXPORT_OF[body.kind]} of ${body.tool}`;
  if (body.kind === "command") return `${EXPORT_OF.command} '${body.name}'`;
  return EXPORT_OF[body.kind];
}

const describeExit = (exit: ExitInfo) => (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`);

export class PluginProcess {
  readonly label: string;
  readonly pid: number;
  /** Resolves once the process has exited (and its protocol output has been read). */
  readonly exited: Promise<ExitInfo>;
  /** When it was spawned, when each startup step began, when it was ready (performance.now()). */
  readonly timings: { spawnAt: number; phases: { name: string; at: number }[]; readyAt: number } = { spawnAt: performance.now(), phases: [], readyAt: 0 };
  private readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  private readonly hooks: ProcessHooks;
  private readonly calls: Calls;
  private readonly outbox: string[] = [];
  private readonly tail: string[] = [];
  private phase = "startup";
  private exit: ExitInfo | null = null;
  private closing = false;
  private startup: ((line: StartupLine | CxError) => void) | null = null;
  /** Processes the plugin registered. */
  private readonly children: Target[] = [];

  private constructor(options: SpawnOptions) {
    this.label = options.label;
    this.hooks = options;
    this.calls = new Calls(options.label, options.poolCap ?? DEFAULTS.poolCap, options.stuckMs ?? DEFAULTS.stuckMs, (line) => this.write(line));
    const sealed = options.libraryBytes ? sealedCopy(options.libraryBytes, options.label) : null;
    this.proc = Bun.spawn({
      cmd: [...hostCommand(), options.library, ...(sealed === null ? [] : ["--library-fd", "3"])],
      cwd: options.cwd,
      env: {
        ...process.env,
        ...options.env,
        CXAGENT_PARENT_PID: String(process.pid),
        CXAGENT_POOL_CAP: String(options.poolCap ?? DEFAULTS.poolCap),
        CXAGENT_POLL_MS: String(options.pollMs ?? 200),
      },
      stdio: ["pipe", "pipe", "pipe", ...(sealed === null ? [] : [sealed])],
      detached: true, // its own process group, so shutdown can signal everything it started
    }) as Subprocess<"pipe", "pipe", "pipe">;
    if (sealed !== null) closeSync(sealed);
    this.pid = this.proc.pid;
    this.hooks.onSpawn?.(this.pid);
    const protocol = this.readProtocol();
    void this.readStderr();
    this.exited = this.proc.exited.then(async () => {
      const signal = this.proc.signalCode;
      const exit: ExitInfo = { code: this.proc.exitCode, signal: signal === null || signal === undefined ? null : String(signal) };
      // Replies written just before the end are still in the pipe: read them first, briefly,
      // since a process the plugin started may hold the pipe open.
      await within(protocol, 250);
      this.exit = exit;
      this.failAll(exit);
      // What the plugin registered dies with its host: whatever is left is ended now.
      await terminate(this.children, DEFAULTS.graceMs, new Set([this.pid]));
      this.hooks.onGone?.([this.pid, ...this.children.map((c) => c.pid)]);
      return exit;
    });
  }

  /** Spawns a plugin host and waits for its startup line. */
  static async spawn(options: SpawnOptions): Promise<{ process: PluginProcess; ready: Extract<StartupLine, { ready: true }> }> {
    const host = new PluginProcess(options);
    const startupMs = options.startupMs ?? DEFAULTS.startupMs;
    const line = await new Promise<StartupLine | CxError>((resolve) => {
      const timer = setTimeout(() => {
        resolve(
          new CxError("E_TIMEOUT", `plugin '${host.label}' did not become ready within ${startupMs / 1000} s (it was in ${host.phase})`, {
            hint: "a library constructor or cxagent_plugin_describe is blocking; check the plugin with --verbose",
          }),
        );
      }, startupMs);
      host.startup = (value) => {
        clearTimeout(timer);
        resolve(value);
      };
      void host.exited.then((exit) => {
        clearTimeout(timer);
        resolve(
          new CxError("E_CRASHED", `the plugin host for '${host.label}' ended (${describeExit(exit)}) during ${host.phase}${host.tailText()}`, {
            details: { exitCode: exit.code, signal: exit.signal, stderr: host.tail.slice() },
          }),
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
        hint: hintForRefusal(line.reason),
      });
    }
    return { process: host, ready: line };
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /**
   * Sends one request and waits for its reply, its deadline, its cancellation, or the host's end
   * (see Calls for the limit on calls in native code). A stop is never held back by that limit.
   */
  request(body: RequestBody, options: RequestOptions = {}): Promise<Reply> {
    const what = describeRequest(body);
    if (this.exit) return Promise.reject(this.crashError(this.exit, what));
    if (this.closing && body.kind !== "stop") {
      return Promise.reject(new CxError("E_STOPPED", `plugin '${this.label}' is stopping; ${what} was not sent`));
    }
    return this.calls.start(body, what, options, body.kind === "stop");
  }

  /** A request that gets no reply. */
  private send(body: { kind: "ack"; seq: number }) {
    this.write(JSON.stringify({ id: this.calls.takeId(), ...body }) + "\n");
  }

  /**
   * Requests made in the same turn of the event loop go out in one write: every write wakes a
   * thread of the plugin host, and on a VM a wake-up costs more than the write itself.
   */
  private write(line: string) {
    this.outbox.push(line);
    if (this.outbox.length > 1) return;
    // Alone, a request goes out at once; with calls in flight, replies keep arriving, so waiting
    // for the event loop's turn collects the requests they trigger into one write.
    if (this.calls.inFlight > 1) setImmediate(() => this.flushOutbox());
    else queueMicrotask(() => this.flushOutbox());
  }

  private flushOutbox() {
    const text = this.outbox.length === 1 ? this.outbox[0]! : this.outbox.join("");
    this.outbox.length = 0;
    try {
      this.proc.stdin.write(text);
      this.proc.stdin.flush();
    } catch {
      // the host is gone; its exit handler fails pending calls with the cause
    }
  }

  /**
   * Ends the host gracefully: stop (bounded), close stdin, wait, then SIGTERM and SIGKILL to its
   * process group. Returns the error stop produced, if any; never throws.
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
            : new CxError("E_PLUGIN_FAILED", `plugin '${this.label}': cxagent_plugin_stop failed: ${reply.error}`);
        }
      } catch (error) {
        stopError = error as CxError;
      }
    }
    this.closing = true;
    try {
      this.proc.stdin.end();
    } catch {
      // already closed
    }
    await this.escalate(options.graceMs ?? DEFAULTS.graceMs);
    return stopError;
  }

  /** Ends the host at once (used when startup failed or a deadline passed). */
  async kill(): Promise<void> {
    this.closing = true;
    this.signalGroup("SIGKILL");
    await this.exited;
    this.signalGroup("SIGKILL");
  }

  private async escalate(graceMs: number) {
    if (!(await within(this.exited, graceMs))) {
      this.signalGroup("SIGTERM");
      if (!(await within(this.exited, graceMs))) this.signalGroup("SIGKILL");
    }
    await this.exited;
    // Whatever is still in the host's process group was started by the plugin and outlived it.
    // (Asked of the kernel first: the /proc walk costs about 1 ms per 100 processes on the machine.)
    const leftovers = () => groupMayHaveMembers(this.pid) && groupMembers(this.pid).length > 0;
    if (leftovers() && this.signalGroup("SIGTERM")) {
      const deadline = performance.now() + graceMs;
      while (leftovers() && performance.now() < deadline) await Bun.sleep(10);
      if (leftovers()) this.signalGroup("SIGKILL");
    }
  }

  /**
   * Signals the host's process group. The group id is the host's pid, and Linux does not hand out
   * a pid while a process group of that id still has members, so this reaches only our processes.
   */
  private signalGroup(signal: NodeJS.Signals): boolean {
    try {
      process.kill(-this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  private tailText(): string {
    return this.tail.length ? `; its last output:\n${this.tail.map((l) => `  | ${l}`).join("\n")}` : "";
  }

  private crashError(exit: ExitInfo, what: string): CxError {
    return new CxError("E_CRASHED", `plugin '${this.label}' crashed (${describeExit(exit)}) while ${what} was running${this.tailText()}`, {
      hint: "the plugin will be restarted on its next call; run with --verbose to see all it wrote",
      details: { exitCode: exit.code, signal: exit.signal, stderr: this.tail.slice() },
    });
  }

  /** Whether any call was waiting when the process ended (so its error already told the caller). */
  hadPendingAtExit = false;

  private failAll(exit: ExitInfo) {
    this.hadPendingAtExit = this.calls.waiting > 0;
    this.calls.failAll((what) => this.crashError(exit, what));
  }

  private async readProtocol() {
    try {
      await readLines(this.proc.stdout, LINE_CAP, (line) => {
        if (line.cut > 0) {
          this.hooks.onLog?.(4, `the plugin host wrote a protocol line over the ${LINE_CAP >> 20} MiB cap (${line.text.length + line.cut} bytes); it was dropped`);
        } else if (line.text) {
          this.dispatch(line.text);
        }
      });
    } catch (error) {
      this.hooks.onLog?.(4, `reading the plugin host's output failed: ${String(error)}`);
    }
  }

  private dispatch(text: string) {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text);
    } catch {
      this.hooks.onLog?.(4, `the plugin host wrote a line that is not JSON: ${preview(text)}`);
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
      this.hooks.onLog?.(4, `the plugin host sent a malformed reply: ${preview(text)}`);
      return;
    }
    this.calls.settle(reply);
  }

  private onEvent(message: Record<string, unknown>) {
    const parsed = v.safeParse(EventSchema, message);
    if (!parsed.success) return; // a report the host cannot read costs that report only
    const event: WireEvent = parsed.output;
    switch (event.event) {
      case "phase":
        this.timings.phases.push({ name: event.name, at: performance.now() });
        this.phase = event.name === "dlopen" ? "loading the library (its constructors)" : event.name;
        return;
      case "submit":
        this.hooks.onSubmit?.(event);
        return;
      case "child":
        this.children.push({ pid: event.pid, startTime: event.startTime });
        try {
          this.hooks.onChild?.(event);
        } finally {
          if (event.ack) this.send({ kind: "ack", seq: event.ack });
        }
        return;
      case "log":
        if (event.id === 0) {
          this.hooks.onLog?.(event.level, event.text);
          return;
        }
        this.calls.event(event.id, { type: "log", level: event.level, text: event.text });
        return;
      case "progress":
        this.calls.event(event.id, { type: "progress", percent: event.percent, text: event.text });
        return;
      case "stream":
        this.calls.event(event.id, { type: "stream", text: event.text });
        return;
    }
  }

  private async readStderr() {
    try {
      await readLines(this.proc.stderr, DEFAULTS.stderrLineCap, (line) => {
        const text = line.cut ? `${line.text}… [${line.cut} more bytes]` : line.text;
        this.tail.push(text.length > 400 ? text.slice(0, 400) + "…" : text);
        if (this.tail.length > DEFAULTS.stderrTailLines) this.tail.shift();
        this.hooks.onOutput?.(text);
      });
    } catch {
      // the pipe broke: the exit handler reports why
    }
  }
}

function codeForRefusal(reason: string | undefined): ErrorCode {
  switch (reason) {
    case "handshake":
      return "E_HANDSHAKE";
    case "manifest":
      return "E_MANIFEST";
    default:
      return "E_LOAD";
  }
}

function hintForRefusal(reason: string | undefined): string {
  switch (reason) {
    case "handshake":
      return "rebuild the plugin against this host's ffi/cxagent_plugin.h";
    case "manifest":
      return "fix what cxagent_plugin_describe returns; it must match the sidecar <name>.plugin.json";
    case "exports":
      return "export every mandatory function with CXAGENT_PLUGIN_EXPORT (see ffi/cxagent_plugin.h)";
    default:
      return "check that the path names a shared library built for this machine";
  }
}
