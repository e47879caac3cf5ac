/**
 * The one error class of cxagent. Every failure a user can meet carries a stable `code`, a message
 * that says what failed and why, a hint in plain words, and, where there is one, a structured next
 * step. The library names no CLI flag: the CLI (cli/_hints.ts) turns a next step into a command the
 * user can run. Exit codes come only from EXIT_CODES and the result table below.
 */
import { isDeniedByHost, type JobResult } from "./protocol/result.ts";

export const EXIT_CODES = {
  E_TOOL_FAILED: 1, // the tool ran and reported success:false (or a command refused)
  E_USAGE: 2,
  E_INVALID_INPUT: 3, // arguments, a JSON value given on the command line
  E_CONFIG: 3, // config.json
  E_MANIFEST: 3, // a sidecar or a described manifest that breaks the schema
  E_NOT_FOUND: 3, // a plugin reference that resolves to nothing
  E_DISABLED: 3, // enabled: false in config.json, and no --once
  E_UNKNOWN_TOOL: 3,
  E_TOOL_HIDDEN: 3, // a tool that config.json, the project's config or the caller hides
  E_UNKNOWN_COMMAND: 3,
  E_REDACTED_ECHO: 3, // a call's arguments hold a redaction marker: the model sent back a redacted secret
  E_STATE: 3, // a corrupt file in the state directory
  E_NOT_APPROVED: 4,
  E_DENIED: 4,
  E_NEEDS_TTY: 4,
  E_LOAD: 5, // the library could not be loaded: not a library, missing exports
  E_HANDSHAKE: 5,
  E_MISMATCH: 5, // sidecar and describe disagree
  E_COLLISION: 5, // a tool or command name already held
  E_SHADOWED: 5, // a plugin with the name of a config.json entry that means a plugin in another folder
  E_PLUGIN_FAILED: 5, // the plugin answered ok:false
  E_BAD_REPLY: 5, // the plugin's answer was not a valid envelope
  E_CRASHED: 5,
  E_SANDBOX: 5, // a declared restriction this kernel cannot enforce (issue 39), naming the layer
  E_LIMIT: 5, // a limit passed: a host killed by its sandbox's memory or processes ({limit, value}, issue 39), an answer past the read cap (issue 41)
  E_QUARANTINED: 5,
  E_BUSY: 5,
  E_STOPPED: 5, // a call on a plugin that was stopped
  E_TIMEOUT: 6,
  E_CANCELLED: 6,
  E_INTERNAL: 70,
  E_INTERRUPTED: 130,
} as const;

export type ErrorCode = keyof typeof EXIT_CODES;

/**
 * What the user can do about an error, as data: each front end words it its own way (the CLI with
 * its commands and flags, a script with its options, an MCP client with nothing to type).
 */
export type NextStep =
  /** Approve the plugin's files: this exact hash, after reviewing them. */
  | { do: "approve"; ref: string; hash: string }
  /** Load a plugin that config.json disables, for this session only (it still needs approval). */
  | { do: "load-once"; ref: string }
  /** Allow a call that needed a person, once. */
  | { do: "allow-call"; plugin: string; tool: string }
  /** Give the call more time than it had: `ms` is the deadline that was too short (give more than this). */
  | { do: "raise-timeout"; ms: number }
  /** Look at everything the plugin wrote (its stdout and stderr, its logs). */
  | { do: "see-output"; plugin: string }
  /** Start a fresh plugin host (stuck calls cannot be interrupted), or a new session. */
  | { do: "restart"; plugin: string }
  /** Use another folder for state, config or the project. */
  | { do: "choose-folder"; which: "state" | "config" | "project"; path: string }
  /** See which plugins there are. */
  | { do: "list-plugins" }
  /** A bug in cxagent: report it with what it printed. */
  | { do: "report-bug" };

export interface CxErrorOptions {
  hint?: string;
  next?: NextStep;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class CxError extends Error {
  override readonly name = "CxError";
  readonly code: ErrorCode;
  /** What to do next, in words that name no command or flag. */
  readonly hint: string | undefined;
  readonly next: NextStep | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: CxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
    this.next = options.next;
    this.details = options.details;
  }

  get exitCode(): number {
    return EXIT_CODES[this.code];
  }

  /** The `--json` shape of SPEC §9 (the CLI puts its own wording of `next` in `hint`). */
  toJSON() {
    return { code: this.code, message: this.message, hint: this.hint ?? null, next: this.next ?? null, details: this.details ?? null };
  }
}

export function isCxError(value: unknown, code?: ErrorCode): value is CxError {
  return value instanceof CxError && (code === undefined || value.code === code);
}

/** Wraps anything thrown into a CxError, keeping CxErrors as they are. */
export function asCxError(error: unknown): CxError {
  if (error instanceof CxError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CxError("E_INTERNAL", `internal error: ${message}`, {
    cause: error,
    hint: "this is a bug in cxagent; please report it with what was printed",
    next: { do: "report-bug" },
  });
}

/**
 * The exit code of a call that produced a result (SPEC §9): 0 it succeeded; 1 the tool ran and
 * reported failure, or refused, or denied the call itself; 4 cxagent denied it (a person, or the
 * policy when nobody could be asked). The one table, for invoke, command and every adapter.
 */
export function resultExitCode(result: JobResult): number {
  if (isDeniedByHost(result)) return EXIT_CODES.E_DENIED;
  return result.success ? 0 : EXIT_CODES.E_TOOL_FAILED;
}

/** The exit code of a command's answer: a refusal is the command's own failure. */
export function commandExitCode(result: { status: string }): number {
  return result.status === "refused" ? EXIT_CODES.E_TOOL_FAILED : 0;
}
