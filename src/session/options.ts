/** What a session and its loads are given, and what some of its methods answer (Session, session.ts). */
import type { ToolChoice } from "../discovery/config.ts";
import type { PermissionAnswer, PermissionHandler } from "../host/gate.ts";
import type { Logger } from "../log.ts";
import type { ConfirmTrust } from "../trust/check.ts";

export interface SessionOptions {
  /** The project folder: plugins' working directory and the scope of grants. */
  cwd?: string;
  /** Where config.json is (default: $CXAGENT_CONFIG_DIR, else ~/.config/cxagent). */
  configDir?: string;
  /** Where approvals, grants and session records are (default: $CXAGENT_STATE_DIR, else ~/.local/state/cxagent). */
  stateDir?: string;
  /**
   * Asks a person whether to approve a plugin whose exact files were not approved yet; a true
   * answer is recorded. Without one, such a load is refused with E_NOT_APPROVED (the library never
   * prompts by itself: the CLI passes its terminal prompt, an app its own dialog).
   */
  confirmTrust?: ConfirmTrust | null;
  logger?: Logger;
  /** Every line a plugin writes to stdout or stderr. Default: the logger, at debug level. */
  onOutput?: (plugin: string, line: string) => void;
  /** Log reports a plugin makes outside a call, and host messages about it. */
  onLog?: (plugin: string, level: number, text: string) => void;
  /**
   * Decides calls that need permission when the call itself names nobody. Default: deny — a
   * script decides its own prompts.
   */
  permission?: PermissionHandler | PermissionAnswer;
  /**
   * How long a "dynamic" tool's gate may take before it counts as failed (default 500 ms, or a
   * plugin's `gateTimeoutMs` in config.json; with both, the shorter).
   */
  gateMs?: number;
  /**
   * Narrows every plugin's tools further than the config files do, never less: hides the tools a
   * `deny` pattern matches, and those no `allow` pattern matches when `allow` is given; makes the
   * ones an `ask` pattern matches ask on every call. Patterns: a tool name, `*` any run, `?` one
   * character, anchored.
   */
  tools?: ToolChoice;
  /** End processes left behind by sessions that died, before this one starts (default true). */
  reap?: boolean;
  /**
   * Where module plugins' snapshots are written: a folder only this user can write, all the way
   * up (default: $XDG_RUNTIME_DIR/cxagent when that is private, else `<stateDir>/run`;
   * host/private-folder.ts). `cxagent check`, whose state folder is a throwaway one under the
   * temporary folder, passes the user's own.
   */
  snapshotDir?: string;
  /**
   * Extra environment variables for every plugin host this session starts, on top of the few it
   * always passes (see session/host-env.ts: PATH, HOME, the locale, …, and CXAGENT_PASS_ENV).
   */
  env?: Record<string, string>;
  /**
   * The spin window in µs, for benchmarks (CXAGENT_HOST_SPIN_US sets it too): the plugin hosts'
   * (default: theirs, 100) and this process's while it waits for the only call in flight (at most
   * 50; host/reply-spin.ts). 0 turns both off.
   */
  spinUs?: number;
  /** Who calls through this session, as a Cortex plugin's InvocationContext.source says it: "cli", "library" (the default) or "mcp". */
  source?: "cli" | "library" | "mcp";
  /** At most this many calls of one plugin in native code at once (default 16). */
  poolCap?: number;
  /** When every one of those has run this long, further calls fail at once with E_BUSY (default 1000 ms). */
  stuckMs?: number;
  /** Deadlines, for tests and impatient scripts. */
  startupMs?: number;
  startMs?: number;
  stopMs?: number;
  pollMs?: number;
}

/** A plugin this session could load, as config.json and discovery name it (no plugin code runs). */
export interface AvailablePlugin {
  name: string;
  /** What to pass to `load()`. */
  ref: string;
  /** Named in config.json (else found by discovery). */
  configured: boolean;
  /** False when config.json says enabled: false. */
  enabled: boolean;
  /** Why it cannot be loaded as it is (a missing file, a bad sidecar), or null. */
  problem: string | null;
}

export interface LoadOptions {
  /** The plugin's settings, passed verbatim to start (default: its settings in config.json). */
  settings?: unknown;
  /**
   * Load it even if the user's config.json says enabled: false, for this session only. Trust
   * still applies, and a project's enabled: false still holds.
   */
  once?: boolean;
  /** Narrows this plugin's tools further, as `SessionOptions.tools` does for every plugin. */
  tools?: ToolChoice;
}

/** What `approve` did: the plugin at its folder, the hash approved, and whether it already was. */
export interface ApprovalResult {
  plugin: string;
  version: string;
  hash: string;
  /** The real path of the folder the approval is bound to. */
  folder: string;
  already: boolean;
}

export interface ApproveOptions {
  /** Approve without asking, only if the plugin's files hash to exactly this (64 hex digits). */
  hash?: string;
  /** Who to ask when no hash is given (default: the session's confirmTrust). */
  confirm?: ConfirmTrust;
}
