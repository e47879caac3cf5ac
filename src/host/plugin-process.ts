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
import { endProcesses, finished } from "../reaper/escalate.ts";
import { type Owned, proveDescent } from "../reaper/ours.ts";
import { readStat } from "../reaper/proc.ts";
import { makeNonDumpable } from "./nondumpable.ts";
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
  /** The plugin host was spawned (before anything else happens): its pid, start time, group and session. */
  onSpawn?: (host: Owned) => void;
  /**
   * The plugin registered a process and it proved to be the plugin host's descendant (read from
   * /proc here, never taken from the plugin's word); it is confirmed to the plugin once this
   * returns. A registration that does not prove out goes to onLog instead.
   */
  onChild?: (child: Required<Owned>) => void;
  /** These processes (the host, its registered children) have ended and need no reaping. */
  onGone?: (pids: number[]) => void;
}

/** A library from the plugin's folder that its library needs, with the approved bytes. */
export interface SealedDependency {
  /** Its path in the load set, for messages. */
  path: string;
  /** The name it is needed by and its DT_SONAME: the loader matches the sealed copy by it. */
  soname: string;
  bytes: Uint8Array;
}

export interface SpawnOptions extends ProcessHooks {
  /** The command that starts a plugin host, without the library: the session knows where cxagent is. */
  hostCommand: string[];
  library: string;
  /** The library's approved bytes: loaded from a sealed copy of these, not from the file. */
  libraryBytes?: Uint8Array;
  /** Loaded from sealed copies too, in this order, before the library. */
  dependencies?: SealedDependency[];
  /** The plugin's name, for messages. */
  label: string;
  cwd: string;
  startupMs?: number;
  poolCap?: number;
  stuckMs?: number;
  pollMs?: number;
  env?: Record<string, string | undefined>;
}

/**
 * Sealed in-memory copies of the approved bytes: the library first, then its dependencies. On
 * Linux a load whose copies cannot be made is refused rather than loaded from the files, which
 * may have changed; elsewhere (no memfd) the files are loaded.
 */
function sealedCopies(options: SpawnOptions): number[] {
  if (!options.libraryBytes) return [];
  const fds: number[] = [];
  const parts: [Uint8Array, string][] = [[options.libraryBytes, options.label], ...(options.dependencies ?? []).map((d) => [d.bytes, `${options.label}:${d.soname}`] as [Uint8Array, string])];
  for (const [bytes, name] of parts) {
    const fd = sealedCopy(bytes, name);
    if (fd === null) {
      for (const open of fds) closeSync(open);
      if (process.platform !== "linux" && fds.length === 0) return [];
      throw new CxError("E_LOAD", `plugin '${options.label}' was not loaded: cxagent could not make a sealed in-memory copy (memfd) of its approved bytes`, {
        hint: "the plugin host loads only sealed copies of what was approved; check that memfd_create is allowed here",
      });
    }
    fds.push(fd);
  }
  return fds;
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

/**
 * Keeps Bun's crash report out of a plugin's stderr tail. A plugin that faults takes the plugin
 * host down inside Bun's own signal handler, which prints a banner blaming Bun and asking for a bug
 * report; the crash is the plugin's, so the tail keeps only what the plugin wrote, and the fault
 * itself ("Segmentation fault at address 0x8") is kept apart for the message. The banner runs from
 * a rule of '=' followed by "Bun v…" to its bun.report link and the blank line after it.
 */
export class RuntimeBannerFilter {
  /** The fault the runtime reported ("Segmentation fault at address 0x8"), once it has. */
  fault: string | null = null;
  private held: string | null = null;
  private inBanner = false;
  private afterLink = false;

  /** The lines of the plugin's own to keep, for one line read from the plugin host's stderr. */
  accept(line: string): string[] {
    if (this.afterLink) {
      this.afterLink = false;
      if (line.trim() === "") return [];
    }
    if (this.inBanner) {
      const panic = /^panic(?:\([^)]*\))?: (.+)$/.exec(line);
      if (panic) this.fault ??= panic[1]!.trim();
      if (/https:\/\/bun\.report\//.test(line)) {
        this.inBanner = false;
        this.afterLink = true;
      }
      return [];
    }
    if (this.held !== null) {
      const held = this.held;
      this.held = null;
      if (/^Bun v\d/.test(line)) {
        this.inBanner = true;
        return [];
      }
      return [held, ...this.accept(line)];
    }
    if (/^={40,}$/.test(line)) {
      this.held = line;
      return [];
    }
    return [line];
  }

  /** A rule line held back to see whether a banner follows, when the stream has ended. */
  flush(): string[] {
    const held = this.held;
    this.held = null;
    return held === null ? [] : [held];
  }
}

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
  private readonly banner = new RuntimeBannerFilter();
  private phase = "startup";
  private exit: ExitInfo | null = null;
  private closing = false;
  private startup: ((line: StartupLine | CxError) => void) | null = null;
  /** The plugin host as read from /proc when it was spawned: it leads its own group and session. */
  private readonly host: Owned;
  /** Processes the plugin registered that proved to be the host's descendants. */
  private readonly children: Owned[] = [];

  private constructor(options: SpawnOptions) {
    this.label = options.label;
    this.hooks = options;
    this.calls = new Calls({
      label: options.label,
      poolCap: options.poolCap ?? DEFAULTS.poolCap,
      stuckMs: options.stuckMs ?? DEFAULTS.stuckMs,
      send: (line) => this.write(line),
    });
    makeNonDumpable(); // before any plugin host exists (see nondumpable.ts); Session.open did it already
    const copies = sealedCopies(options);
    const sealed = copies.length ? copies[0]! : null;
    const dependencyArgs = copies.slice(1).flatMap((_fd, i) => ["--dependency", `${3 + 1 + i}:${options.dependencies![i]!.path}`]);
    this.proc = Bun.spawn({
      cmd: [...options.hostCommand, options.library, ...(sealed === null ? [] : ["--library-fd", "3", ...dependencyArgs])],
      cwd: options.cwd,
      env: {
        ...process.env,
        ...options.env,
        CXAGENT_PARENT_PID: String(process.pid),
        CXAGENT_POOL_CAP: String(options.poolCap ?? DEFAULTS.poolCap),
        CXAGENT_POLL_MS: String(options.pollMs ?? 200),
      },
      stdio: ["pipe", "pipe", "pipe", ...copies],
      detached: true, // its own process group, so shutdown can signal everything it started
    }) as Subprocess<"pipe", "pipe", "pipe">;
    for (const fd of copies) closeSync(fd);
    this.pid = this.proc.pid;
    const stat = readStat(this.pid);
    this.host = stat ? { pid: this.pid, startTime: stat.startTime, pgid: stat.pgid, sid: stat.sid } : { pid: this.pid, startTime: "0" };
    this.hooks.onSpawn?.(this.host);
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
      // What the plugin registered, and what it left in the host's group, dies with the host.
      const endings = await endProcesses([this.host, ...this.children], { graceMs: DEFAULTS.graceMs });
      this.hooks.onGone?.(finished(endings));
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
            hint: "a library constructor or cxagent_plugin_describe is blocking; what the plugin wrote may say why",
            next: { do: "see-output", plugin: host.label },
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
          new CxError("E_CRASHED", `plugin '${host.label}' crashed (${describeExit(exit)}) during ${host.phase}${host.faultText()}${host.tailText()}`, {
            hint: "what the plugin wrote may say why",
            next: { do: "see-output", plugin: host.label },
            details: { exitCode: exit.code, signal: exit.signal, fault: host.banner.fault, stderr: host.tailLines() },
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

  /** Ends the host and its process group at once (used when startup failed or a deadline passed). */
  async kill(): Promise<void> {
    this.closing = true;
    await endProcesses([this.host], { graceMs: 0 });
    await this.exited;
  }

  /** The host had `graceMs` to exit after stdin closed: then SIGTERM, SIGKILL, to its whole group. */
  private async escalate(graceMs: number) {
    if (!(await within(this.exited, graceMs))) await endProcesses([this.host], { graceMs });
    await this.exited;
  }

  /** The plugin's last lines on stderr, without the runtime's crash banner. */
  private tailLines(): string[] {
    return [...this.tail, ...this.banner.flush()].slice(-DEFAULTS.stderrTailLines);
  }

  /** The fault as the runtime reported it: " (Segmentation fault at address 0x8)". */
  private faultText(): string {
    return this.banner.fault ? ` (${this.banner.fault})` : "";
  }

  private tailText(): string {
    const lines = this.tailLines();
    return lines.length ? `; its last output:\n${lines.map((l) => `  | ${l}`).join("\n")}` : "";
  }

  private crashError(exit: ExitInfo, what: string): CxError {
    return new CxError("E_CRASHED", `plugin '${this.label}' crashed (${describeExit(exit)}) while ${what} was running${this.faultText()}${this.tailText()}`, {
      hint: "the next call to it starts a fresh plugin host; what the plugin wrote may say why it crashed",
      next: { do: "see-output", plugin: this.label },
      details: { exitCode: exit.code, signal: exit.signal, fault: this.banner.fault, stderr: this.tailLines() },
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
        // The line may come from anything that can write to the protocol pipe, plugin code
        // included: only what /proc shows counts (the line's startTime is not even read).
        try {
          const proof = proveDescent(event.pid, this.host);
          if (proof.ok) {
            this.children.push(proof.process);
            this.hooks.onChild?.(proof.process);
          } else {
            this.hooks.onLog?.(3, `register_child(${event.pid}) was refused: ${proof.reason}; nothing was recorded`);
          }
        } finally {
          if (event.ack) this.send({ kind: "ack", seq: event.ack });
        }
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
      case "stream":
        this.calls.event(event.id, { event: "stream", text: event.text });
        return;
    }
  }

  private async readStderr() {
    try {
      await readLines(this.proc.stderr, DEFAULTS.stderrLineCap, (line) => {
        const text = line.cut ? `${line.text}… [${line.cut} more bytes]` : line.text;
        for (const kept of this.banner.accept(text)) {
          this.tail.push(kept.length > 400 ? kept.slice(0, 400) + "…" : kept);
          if (this.tail.length > DEFAULTS.stderrTailLines) this.tail.shift();
        }
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
