/**
 * A plugin written in TypeScript or JavaScript (a module plugin): what its module default-exports,
 * `definePlugin({...})`, and what each of its functions is given. The types come from the same
 * schemas as the native ABI's JSON (manifest.ts, result.ts), so a module returns exactly what a
 * native plugin writes by hand, as objects.
 *
 * A module plugin imports this as `import { definePlugin } from "cxagent"`. In its plugin host,
 * "cxagent" is this file's runtime half only — `definePlugin` and `LOG_LEVELS` — provided by the
 * host itself (plugin-host/module-loader.ts); nothing else of cxagent is importable there.
 */
import type { ManifestInput } from "./manifest.ts";
import type { CommandResultInput, GateAnswerInput, JobResultInput, SubmitRequestInput } from "./result.ts";

export type { CommandResultInput, GateAnswerInput, JobResultInput, ManifestInput, SubmitRequestInput };

/** Log levels by name, as the native host table numbers them (0 trace … 5 critical). */
export const LOG_LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, critical: 5 } as const;
export type LogLevel = keyof typeof LOG_LEVELS;

/** What start is given, and every call after it: the context of SPEC §4.3, and the plugin's own log. */
export interface PluginContext {
  /** The project folder (absolute). */
  readonly workingDirectory: string;
  /** The plugin's settings from config.json, verbatim; `{}` when there are none. */
  readonly settings: unknown;
  /** The contract of the host running the plugin. */
  readonly hostContract: number;
  /** Writes to the plugin's log (not tied to a call; inside a call, use the call's own log). */
  log(level: LogLevel | number, text: string): void;
  /**
   * Records a process the plugin started, so it is ended with the plugin and reaped after a crash
   * (SPEC §8). The parent checks that it descends from this plugin host and writes it down before
   * the promise settles; a refusal is logged by the parent. pid ≤ 0 is ignored.
   */
  registerChild(pid: number): Promise<void>;
  /**
   * The value of secret `name`, which the sidecar declares under "secrets" and the user bound in
   * config.json (issue 40). Asked of cxagent each time, over the host's private pipe; never in the
   * environment, argv or a file. Rejects with an Error whose `code` is "undeclared", "unbound" or
   * "unavailable" (the plugin's log says why). Whatever the plugin sends back holds
   * `[REDACTED:<name>]` where the value (raw, base64, hex or percent-encoded) was.
   */
  secret(name: string): Promise<string>;
}

/** What a gate is given: the plugin context, and a signal aborted when the parent stops waiting. */
export interface GateContext extends PluginContext {
  readonly signal: AbortSignal;
}

/** What invoke and command are given: reports tied to this call, and its cancellation. */
export interface CallContext extends PluginContext {
  /** The call's id (what `current_call()` returns to a native plugin). */
  readonly id: number;
  /**
   * Aborted when the parent abandons the call (its deadline passed, its caller cancelled it);
   * `signal.reason` is an Error whose message says which. The call's answer is discarded then.
   */
  readonly signal: AbortSignal;
  /** 0–100, or -1 for "busy, no estimate". */
  progress(percent: number, text?: string): void;
  /** A log line tied to this call. */
  log(level: LogLevel | number, text: string): void;
  /** Partial output as it is produced. */
  stream(text: string): void;
}

export type Maybe<T> = T | null | undefined | void;
export type Awaitable<T> = T | Promise<T>;

/**
 * A module plugin. start, invoke and stop are required; the others are optional, as the native
 * exports are. Every function may be async; a thrown error or a rejected promise fails that call
 * (`ok: false` with the error's message) and nothing else.
 */
export interface ModulePlugin {
  /**
   * The manifest, which must agree with the sidecar `<stem>.plugin.json` (SPEC §4.2). Without
   * describe, the sidecar itself is the manifest.
   */
  describe?(): Awaitable<ManifestInput>;
  start(context: PluginContext): Awaitable<void>;
  /**
   * Runs a tool. `args` is the call's JSON object ({} without arguments). Return the JobResult;
   * `success` defaults to false, so say `success: true` when it worked.
   */
  invoke(tool: string, args: Record<string, unknown>, call: CallContext): Awaitable<JobResultInput>;
  /** For tools gated "dynamic": nothing (no prompt), or the wording to ask with. */
  gate?(tool: string, args: Record<string, unknown>, context: GateContext): Awaitable<Maybe<GateAnswerInput>>;
  stop(): Awaitable<void>;
  /** Called every poll interval once start succeeded, never twice at once: work to start, or nothing. */
  poll?(): Awaitable<Maybe<SubmitRequestInput>>;
  /** Runs a command; `text` is what followed its name, trimmed. Nothing = reported, no message. */
  command?(name: string, text: string, call: CallContext): Awaitable<Maybe<CommandResultInput>>;
}

/** Types a module plugin; returns it unchanged. */
export function definePlugin<const T extends ModulePlugin>(plugin: T): T {
  return plugin;
}
