/** What a connection to a plugin host is opened with, and how it tells of the host's end (connection.ts). */
import type { KindProfile } from "../kinds/index.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import type { HostSettings } from "../protocol/host-settings.ts";
import type { KnownManifest } from "../protocol/manifest.ts";
import type { HostSandbox } from "../protocol/sandbox.ts";
import type { CheckEvent } from "../protocol/wire.ts";
import type { Owned } from "../reaper/ours.ts";
import type { SealedDependency } from "./child-transport.ts";
import type { ExitInfo } from "./transport.ts";
import type { SecretAccess } from "../secrets/access.ts";

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
  /** What a plugin host in check mode saw (SpawnOptions.check; `cxagent check`). */
  onCheck?: (event: CheckEvent) => void;
}

export interface ConnectOptions extends ProcessHooks {
  /** The plugin's name, for messages. */
  label: string;
  /** Which kind of plugin: native (the default), cortex, or module; it names what a request calls, in messages. */
  kind?: PluginKind;
  /** The kind's profile, when the caller chose it already (a session did, at inspection); else `kind`'s. */
  profile?: KindProfile;
  /** The spin windows, µs: the host's (null: its default), and this side's (reply-spin.ts); 0 turns both off. */
  spinUs?: number | null;
  startupMs?: number;
  poolCap?: number;
  stuckMs?: number;
  /** The manifest the plugin should describe, checked already (its sidecar's): see KnownManifest. */
  expected?: KnownManifest;
  /**
   * What the host may ask of the session's secrets, and the redactor every text it sends passes
   * through before anything else reads it (issue 40). None: no secret is given, nothing redacted.
   */
  secrets?: SecretAccess;
}

export interface SpawnOptions extends ConnectOptions {
  /** The command that starts a plugin host, without its arguments: the session knows where cxagent is. */
  hostCommand: string[];
  /** Set when the host starts through the sandbox launcher (hostCommand is the launcher's). */
  sandbox?: HostSandbox;
  library: string;
  /** The library's approved bytes: loaded from a sealed copy of these, not from the file. */
  libraryBytes?: Uint8Array;
  /** Loaded from sealed copies too, in this order, before the library. */
  dependencies?: SealedDependency[];
  cwd: string;
  /**
   * The host's settings, settled once (a session's: Session), passed whole to the transport and
   * the host's command line; the settings given one by one above fill in for a caller without it.
   */
  host?: HostSettings;
  pollMs?: number;
  /** The session a Cortex plugin is told it runs in. */
  sessionId?: string | null;
  /** The plugin host's whole environment (see session/host-env.ts), when `host` is not given. */
  env?: Record<string, string>;
  /** Where a module's snapshot is made, when `host` is not given: a private folder (host/private-folder.ts snapshotBase). */
  snapshotDir?: string;
  /** A module's "workerFolders" (config.json), when `host` is not given: folders outside its own its Workers may start from. */
  workerFolders?: string[];
  /** Check mode (`cxagent check`): the host watches every export and says what it sees (onCheck). */
  check?: boolean;
}

/** How the host ended, and whether a call was waiting on it (its caller was told by its error). */
export interface Ending {
  exit: ExitInfo;
  hadPending: boolean;
}
