/**
 * The one error class of cxagent. Every failure a user can meet carries a stable `code`, a message
 * that says what failed and why, and a hint naming what to do next. Only cli/main.ts turns codes
 * into exit codes, through EXIT_CODES below.
 */

export const EXIT_CODES = {
  E_TOOL_FAILED: 1, // the tool ran and reported success:false (or a command refused)
  E_USAGE: 2,
  E_INVALID_INPUT: 3, // arguments, a JSON value given on the command line
  E_CONFIG: 3, // config.json
  E_MANIFEST: 3, // a sidecar or a described manifest that breaks the schema
  E_NOT_FOUND: 3, // a plugin reference that resolves to nothing
  E_DISABLED: 3, // enabled: false in config.json, and no --once
  E_UNKNOWN_TOOL: 3,
  E_UNKNOWN_COMMAND: 3,
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
  E_QUARANTINED: 5,
  E_BUSY: 5,
  E_STOPPED: 5, // a call on a plugin that was stopped
  E_TIMEOUT: 6,
  E_CANCELLED: 6,
  E_INTERNAL: 70,
  E_INTERRUPTED: 130,
} as const;

export type ErrorCode = keyof typeof EXIT_CODES;

export interface CxErrorOptions {
  hint?: string;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class CxError extends Error {
  override readonly name = "CxError";
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: CxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
    this.details = options.details;
  }

  get exitCode(): number {
    return EXIT_CODES[this.code];
  }

  /** The `--json` shape of SPEC §9. */
  toJSON() {
    return { code: this.code, message: this.message, hint: this.hint ?? null, details: this.details ?? null };
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
    hint: "this is a bug in cxagent; run again with --verbose and report the output",
  });
}
