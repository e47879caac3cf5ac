/**
 * Serving a module plugin's requests (SPEC §5) on the JavaScript event loop: every request is
 * dispatched as it is read, without waiting for the ones before it, so calls run concurrently
 * (a call that computes without awaiting still holds the loop: that is JavaScript's, and it
 * delays only this plugin). Every line is queued, whole, on this one thread — a call's events
 * while it runs, its reply when it settles — and the queue leaves in order through the shim's
 * locked writer: so every event of a call precedes its reply, and a report made after the reply
 * is dropped, as the native host table does. With calls in flight, a turn of the event loop's
 * lines go out in one write.
 */
import { CONTRACT_CURRENT } from "../protocol/manifest.ts";
import { describeValue, preview } from "../protocol/issues.ts";
import { type CallContext, type GateContext, LOG_LEVELS, type ModulePlugin, type PluginContext } from "../protocol/module-plugin.ts";
import { FUNCTION_OF, LINE_CAP } from "../protocol/wire.ts";
import type { Shim } from "./shim.ts";
import { messageOf, Outbox, readLines, reportText, startTimeOf } from "./module-io.ts";

/** How long registerChild waits for the parent to confirm its record. */
const ACK_MS = 5000;
/** How long secret() waits for the parent's answer (a command binding may take up to 10 s). */
const SECRET_MS = 15_000;
const SECRET_WORDS: Record<string, string> = {
  undeclared: "the plugin's sidecar does not declare it",
  unbound: "the user bound nothing to it (config.json plugins.<name>.secrets), or the project's config removed the binding",
  unavailable: "it is bound but did not resolve (the plugin's log says why), or cxagent did not answer",
};

type Json = Record<string, unknown>;
type Polling = { stop: boolean; running: Promise<void> | null; timer: ReturnType<typeof setTimeout> | null };

export interface ServeOptions {
  shim: Shim;
  plugin: ModulePlugin;
  requestFd: number;
  pollMs: number;
  /** Writes paths in the snapshot as the plugin's own folder, for messages. */
  shown: (text: string) => string;
  /** Runs when the requests ended because the parent died, just before the host ends its group. */
  orphaned: () => void;
}

/** How long the plugin host lingers once the parent closed the requests, for output to drain. */
const LINGER_MS = 1000;

/**
 * Serves until the parent closes the request stream, then returns, and the process ends: at once
 * if the plugin holds nothing open (ending on its own lets Bun write out what process.stdout and
 * process.stderr still buffer, which process.exit would drop), else after LINGER_MS. (It must
 * return: Bun keeps a process whose top-level await never settles alive, spinning.)
 */
export async function serve(options: ServeOptions): Promise<void> {
  const server = new ModuleServer(options);
  await readLines(options.requestFd, (line) => server.onLine(line), () => server.log(0, 4, `the plugin host ignored a request over the ${LINE_CAP >> 20} MiB line cap`));
  // The requests also end when the parent dies, maybe before the shim's watcher sees it: then
  // this host must end its group (what the plugin started), not just itself, as shim_wait does.
  if (options.shim.orphaned()) {
    options.orphaned();
    options.shim.endGroup();
  }
  server.end();
  setTimeout(() => process.exit(0), LINGER_MS).unref();
}

class ModuleServer {
  private readonly plugin: ModulePlugin;
  private readonly pollMs: number;
  private readonly shown: (text: string) => string;
  /** Calls that may report (invoke, command), and every call that can be cancelled (gate too). */
  private readonly reporting = new Set<number>();
  private readonly cancellable = new Map<number, AbortController>();
  private readonly acks = new Map<number, () => void>();
  private readonly secretWaits = new Map<number, (answer: Json) => void>();
  private secretSeq = 0;
  private childSeq = 0;
  private context: Omit<PluginContext, "log" | "registerChild" | "secret"> = { workingDirectory: process.cwd(), settings: {}, hostContract: CONTRACT_CURRENT };
  private polling: Polling | null = null;
  private readonly outbox: Outbox;

  constructor(options: ServeOptions) {
    this.plugin = options.plugin;
    this.pollMs = options.pollMs;
    this.shown = options.shown;
    this.outbox = new Outbox(options.shim, () => this.cancellable.size > 0);
  }

  private write(line: Json) {
    this.outbox.send(`${JSON.stringify(line)}\n`);
  }

  /** A log line: tied to call `id` while it reports, else (id 0) the plugin's own log. */
  log(id: number, level: unknown, text: unknown) {
    const number = typeof level === "string" && Object.hasOwn(LOG_LEVELS, level) ? LOG_LEVELS[level as keyof typeof LOG_LEVELS] : Number(level);
    const clamped = Number.isFinite(number) ? Math.min(5, Math.max(0, Math.trunc(number))) : 2;
    if (id !== 0 && !this.reporting.has(id)) return;
    this.write({ event: "log", id, level: clamped, text: reportText(text) });
  }

  onLine(text: string) {
    let request: Json;
    try {
      request = JSON.parse(text);
    } catch (error) {
      return this.log(0, 4, `the plugin host ignored a request it could not read (${(error as Error).message}): ${preview(text)}`);
    }
    const id = request?.id;
    const kind = request?.kind;
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= 0 || typeof kind !== "string") {
      return this.log(0, 4, `the plugin host ignored a request it could not read (no positive integer id or no kind): ${preview(text)}`);
    }
    const object = (value: unknown): Json => (value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {});
    switch (kind) {
      case "ack":
        this.acks.get(Number(request.seq))?.();
        return;
      case "secret":
        this.secretWaits.get(Number(request.seq))?.(request);
        return;
      case "cancel": {
        const controller = this.cancellable.get(Number(request.call));
        const reason = String(request.reason ?? "");
        const why = reason === "E_TIMEOUT" ? "its deadline passed" : reason === "E_BUSY" ? "the plugin was too busy" : "its caller cancelled it";
        controller?.abort(new Error(`cxagent abandoned the call: ${why}`));
        return;
      }
      case "start":
        return void this.start(id, object(request.context));
      case "invoke":
        return void this.call(id, "invoke", (call) => this.plugin.invoke(String(request.tool ?? ""), object(request.arguments), call));
      case "command":
        return void this.command(id, String(request.name ?? ""), String(request.text ?? ""));
      case "gate":
        return void this.gate(id, String(request.tool ?? ""), object(request.arguments));
      case "stop":
        return void this.stop(id);
      default:
        this.write({ id, ok: false, fault: "bad-request", error: `the plugin host does not know the request kind '${kind}'` });
    }
  }

  private pluginContext(): PluginContext {
    return { ...this.context, log: (level, text) => this.log(0, level, text), registerChild: (pid) => this.registerChild(pid), secret: (name) => this.secret(name) };
  }

  /** Asks the parent for secret `name` (issue 40): only over the protocol, only when asked; never cached here. */
  private secret(name: unknown): Promise<string> {
    const asked = String(name);
    const refused = (code: string) => Object.assign(new Error(`secret '${asked}' was not given: ${SECRET_WORDS[code] ?? SECRET_WORDS.unavailable}`), { code });
    if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/.test(asked)) return Promise.reject(refused("undeclared"));
    const seq = ++this.secretSeq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.secretWaits.get(seq)?.({}), SECRET_MS);
      this.secretWaits.set(seq, (answer) => {
        clearTimeout(timer);
        this.secretWaits.delete(seq);
        if (typeof answer.value === "string") resolve(Buffer.from(answer.value, "base64").toString("utf8"));
        else reject(refused(typeof answer.error === "string" ? answer.error : "unavailable"));
      });
      this.write({ event: "secret", name: asked, seq });
    });
  }

  private async start(id: number, context: Json) {
    this.context = {
      workingDirectory: typeof context.workingDirectory === "string" ? context.workingDirectory : process.cwd(),
      settings: context.settings ?? {},
      hostContract: typeof context.hostContract === "number" ? context.hostContract : CONTRACT_CURRENT,
    };
    try {
      await this.plugin.start(this.pluginContext());
    } catch (error) {
      return this.write({ id, ok: false, error: this.shown(messageOf(error, FUNCTION_OF.start)) });
    }
    this.write({ id, ok: true });
    this.beginPolling();
  }

  private async stop(id: number) {
    await this.endPolling();
    try {
      await this.plugin.stop();
    } catch (error) {
      return this.write({ id, ok: false, error: this.shown(messageOf(error, FUNCTION_OF.stop)) });
    }
    this.write({ id, ok: true });
  }

  private callContext(id: number, signal: AbortSignal): CallContext {
    return {
      ...this.pluginContext(),
      id,
      signal,
      log: (level, text) => this.log(id, level, text),
      progress: (percent, text = "") => {
        if (!this.reporting.has(id)) return;
        const n = Number(percent);
        this.write({ event: "progress", id, percent: Number.isFinite(n) ? Math.min(100, Math.max(-1, Math.trunc(n))) : -1, text: reportText(text) });
      },
      stream: (text) => {
        if (this.reporting.has(id)) this.write({ event: "stream", id, text: reportText(text) });
      },
    };
  }

  /** Runs invoke or command; the reply goes out after every report the call made. */
  private async call(id: number, what: "invoke" | "command", run: (call: CallContext) => unknown) {
    const controller = new AbortController();
    this.cancellable.set(id, controller);
    this.reporting.add(id);
    let value: unknown;
    let failed: string | null = null;
    try {
      value = await run(this.callContext(id, controller.signal));
    } catch (error) {
      failed = this.shown(messageOf(error, FUNCTION_OF[what]));
    } finally {
      this.reporting.delete(id);
      this.cancellable.delete(id);
    }
    if (failed !== null) return this.write({ id, ok: false, error: failed });
    if (what === "invoke") {
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        return this.fault(id, `${FUNCTION_OF.invoke} returned ${describeValue(value)}, not a JobResult object`);
      }
      return this.reply(id, "result", value, FUNCTION_OF.invoke);
    }
    if (value === null || value === undefined) return this.write({ id, ok: true });
    this.reply(id, "command", value, FUNCTION_OF.command);
  }

  private command(id: number, name: string, text: string) {
    const command = this.plugin.command;
    if (!command) {
      return this.write({ id, ok: false, fault: "missing-export", error: `the plugin declares commands but its module has no command function, so '${name}' cannot run` });
    }
    return this.call(id, "command", (call) => command.call(this.plugin, name, text, call));
  }

  private async gate(id: number, tool: string, args: Json) {
    const gate = this.plugin.gate;
    if (!gate) return this.write({ id, ok: true }); // no gate function: no prompt (a "dynamic" tool needs one: refused at load)
    const controller = new AbortController();
    this.cancellable.set(id, controller);
    let value: unknown;
    try {
      const context: GateContext = { ...this.pluginContext(), signal: controller.signal };
      value = await gate.call(this.plugin, tool, args, context);
    } catch (error) {
      return this.write({ id, ok: false, error: this.shown(messageOf(error, FUNCTION_OF.gate)) });
    } finally {
      this.cancellable.delete(id);
    }
    if (value === null || value === undefined) return this.write({ id, ok: true });
    this.reply(id, "gate", value, FUNCTION_OF.gate);
  }

  /** `{id, ok: true, <member>: value}`, or a fault when the value cannot travel as JSON. */
  private reply(id: number, member: string, value: unknown, what: string) {
    let text: string;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      return this.fault(id, `${what} returned a value that cannot be written as JSON (${(error as Error).message})`);
    }
    if (text === undefined) return this.fault(id, `${what} returned ${describeValue(value)}, which cannot be written as JSON`);
    if (text.length > LINE_CAP - 1024) return this.fault(id, `${what} returned more than the line cap allows (${text.length} characters)`);
    this.outbox.send(`{"id":${id},"ok":true,"${member}":${text}}\n`);
  }

  private fault(id: number, error: string) {
    this.write({ id, ok: false, fault: "bad-reply", error });
  }

  private async registerChild(pid: number): Promise<void> {
    if (!Number.isSafeInteger(pid) || pid <= 0) return;
    const startTime = startTimeOf(pid);
    if (startTime === null) {
      return this.log(0, 3, `register_child(${pid}) was refused: there is no such process (it may have exited already); nothing was recorded`);
    }
    const seq = ++this.childSeq;
    const confirmed = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ACK_MS);
      this.acks.set(seq, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    this.write({ event: "child", pid, startTime, ack: seq });
    const acked = await confirmed;
    this.acks.delete(seq);
    if (!acked) this.log(0, 3, "register_child: the parent did not confirm the record within 5 s");
  }

  private beginPolling() {
    const poll = this.plugin.poll;
    if (!poll || this.polling) return;
    const state: Polling = { stop: false, running: null, timer: null };
    this.polling = state;
    const once = async () => {
      try {
        const value = await poll.call(this.plugin);
        if (value === null || value === undefined) return;
        if (typeof value !== "object" || Array.isArray(value)) {
          return this.log(0, 3, `poll() returned ${describeValue(value)} instead of a submit object; ignored`);
        }
        const submit = value as { goal?: unknown; wantResult?: unknown };
        const event = { event: "submit", ...("goal" in submit ? { goal: submit.goal } : {}), ...("wantResult" in submit ? { wantResult: submit.wantResult } : {}) };
        let text: string;
        try {
          text = JSON.stringify(event);
        } catch (error) {
          return this.log(0, 3, `poll() returned a value that cannot be written as JSON (${(error as Error).message}); ignored`);
        }
        this.outbox.send(`${text}\n`);
      } catch (error) {
        this.log(0, 3, `poll() failed: ${this.shown(messageOf(error, "poll()"))}`);
      }
    };
    const next = () => {
      if (state.stop) return;
      state.timer = setTimeout(() => {
        state.timer = null;
        state.running = once().finally(() => {
          state.running = null;
          next();
        });
      }, this.pollMs);
    };
    next();
  }

  /** The parent closed the requests: nothing of the host's own keeps the process alive. */
  end() {
    if (this.polling) {
      this.polling.stop = true;
      if (this.polling.timer) clearTimeout(this.polling.timer);
    }
    for (const confirm of this.acks.values()) confirm();
    for (const answer of [...this.secretWaits.values()]) answer({});
  }

  /** Poll must have ended before stop runs: waits for a poll in progress to return. */
  private async endPolling() {
    const state = this.polling;
    if (!state) return;
    state.stop = true;
    if (state.timer) clearTimeout(state.timer);
    await state.running;
  }
}
