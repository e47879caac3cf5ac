/**
 * A plugin host's settings, as one value: the table of their defaults, which the parent settles
 * once per session (Session, settleHostSettings) and passes whole to the transport and to the
 * host's command line (host-args.ts), and which the plugin host reads its own defaults from.
 * Adding a setting is a line here, the place that uses it, and its test.
 */

/** Every setting's default. */
export const HOST_DEFAULTS = {
  /** At most this many calls of one plugin in native code at once (the host's pool). */
  poolCap: 16,
  /** A module plugin's calls wait on its event loop: as many may be out as the parent sends ahead at most (host/calls.ts). */
  pipelineCap: 256,
  /** The poll interval, ms (cxagent_plugin_poll). */
  pollMs: 200,
  /**
   * The longest a request thread of the host spins for the next request before it sleeps, µs,
   * where the shim finds that spinning pays (0: never; see the spin before next_line in the shim).
   */
  spinUs: 100,
  /** Deadlines, ms: the startup line, start, stop. */
  startupMs: 10_000,
  startMs: 30_000,
  stopMs: 10_000,
  /** Between SIGTERM and SIGKILL when a host is ended. */
  graceMs: 2_000,
  /** A call running this long counts as stuck when deciding whether to refuse new calls (E_BUSY). */
  stuckMs: 1_000,
} as const;

/** The front ends a call comes from (a Cortex InvocationContext's source). */
export const INVOCATION_SOURCES = ["cli", "library", "mcp"] as const;
export type InvocationSource = (typeof INVOCATION_SOURCES)[number];

/** The settings every plugin host of a session gets, settled once (Session). */
export interface HostSettings {
  /** Calls in native code at once; null: the kind's (KindProfile.poolCap) in the parent, the table's in the host. */
  poolCap: number | null;
  pollMs: number;
  /** The spin windows, µs: the host's (null: its default) and the parent's (host/reply-spin.ts); 0 turns both off. */
  spinUs: number | null;
  startupMs: number;
  startMs: number;
  stopMs: number;
  stuckMs: number;
  /** The plugin host's whole environment (the session's allow-list: session/host-env.ts). */
  env: Record<string, string>;
  /** The session a Cortex plugin is told it runs in, or null. */
  sessionId: string | null;
  /** Who calls, as a Cortex plugin's InvocationContext.source says it: the CLI, the library, or cxagent mcp. */
  source: InvocationSource;
  /** Where a module's snapshot folder is made: a folder only this user can write (host/private-folder.ts snapshotBase); null: none given. */
  snapshotDir: string | null;
  /** A module's "workerFolders" (its config.json entry): folders outside its own its Workers may start from. */
  workerFolders: string[];
  /** A Cortex process plugin's sandbox, which confines each call's process (host-args.ts --call-sandbox); unset: none. */
  callSandbox?: string;
}

/** What a caller may give: any setting, the rest from the table. */
export type HostSettingsInput = { [K in keyof HostSettings]?: HostSettings[K] | undefined };

/** The settings, each given one or the table's default. */
export function settleHostSettings(given: HostSettingsInput): HostSettings {
  return {
    poolCap: given.poolCap ?? null,
    pollMs: given.pollMs ?? HOST_DEFAULTS.pollMs,
    spinUs: given.spinUs ?? null,
    startupMs: given.startupMs ?? HOST_DEFAULTS.startupMs,
    startMs: given.startMs ?? HOST_DEFAULTS.startMs,
    stopMs: given.stopMs ?? HOST_DEFAULTS.stopMs,
    stuckMs: given.stuckMs ?? HOST_DEFAULTS.stuckMs,
    env: given.env ?? {},
    sessionId: given.sessionId ?? null,
    source: given.source ?? "library",
    snapshotDir: given.snapshotDir ?? null,
    workerFolders: given.workerFolders ?? [],
  };
}
