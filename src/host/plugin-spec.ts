/**
 * What a session hands Plugin.start (PluginSpec), and the options and events of a plugin's calls:
 * the types of host/plugin.ts, apart so that the handle's file holds its behaviour.
 */
import type { CxError } from "../errors.ts";
import type { KindProfile } from "../kinds/index.ts";
import type { HostSettings } from "../protocol/host-settings.ts";
import type { KnownManifest, Manifest } from "../protocol/manifest.ts";
import type { HostSandbox, SandboxDeclaration } from "../protocol/sandbox.ts";
import type { CallEvent, ProcessHooks, SealedDependency } from "./connection.ts";
import type { PermissionAnswer, PermissionHandler } from "./gate.ts";
import type { ToolPolicy } from "./tool-policy.ts";
import type { SecretAccess } from "../secrets/access.ts";
import type { ResultStore } from "../results/store.ts";

/** Where a plugin's standing "Always" grants live: the session scopes them (project, folder). */
export interface GrantStore {
  has(rule: string): boolean;
  add(rule: string): void;
}

/**
 * Whether a manifest the plugin host described may be served: `previous` is null at the first
 * start (the session compares it with the sidecar) and the manifest served so far after a restart.
 * Throws the CxError that refuses it; may return the manifest to serve instead (a Cortex plugin
 * keeps the name it was approved under).
 */
export type AcceptManifest = (described: Manifest, previous: Manifest | null) => Manifest | void;

export interface PluginSpec {
  name: string;
  /** Which kind of plugin, as its profile (kinds/): native (the default: ffi/cxagent_plugin.h), cortex, or a TypeScript/JavaScript module. */
  profile?: KindProfile;
  /** The command that starts a plugin host (see session/host-command.ts). */
  hostCommand: string[];
  /** The library the plugin host loads. */
  library: string;
  /** Its approved bytes (a module's: its folder's files); every plugin host of this plugin loads exactly these. */
  libraryBytes?: Uint8Array;
  /** Libraries from its folder it needs, with their approved bytes, in the order they are loaded. */
  dependencies?: SealedDependency[];
  settings: unknown;
  cwd: string;
  /** The grants this plugin receives and stores. */
  grants: GrantStore;
  /** Checks each manifest the plugin host describes, at the first start and at every restart. */
  accept: AcceptManifest;
  /** The manifest it should describe, checked already (its sidecar's; see KnownManifest). */
  expected?: KnownManifest;
  /**
   * Which tools are hidden (never listed, never called), which ask on every call, and the limits
   * on its calls, with the rule behind each (default: every tool, as its manifest says).
   */
  policy?: ToolPolicy;
  /** How long a gate may take before it counts as failed (default 500 ms). */
  gateMs?: number;
  /** Who decides calls that need permission when the call names nobody (default: deny). */
  permission?: PermissionHandler | PermissionAnswer;
  /**
   * Its plugin hosts' settings (pool, poll, spin, deadlines, environment, session id), settled
   * once by the session and passed whole to each host it starts (protocol/host-settings.ts).
   */
  host: HostSettings;
  /** What the load found odd but not wrong (a Cortex plugin_info naming it otherwise than its manifest.toml). */
  warnings?: string[];
  /** The secrets its hosts may ask for, and the redactor its text passes through (issue 40); none without. */
  secrets?: SecretAccess;
  /** The plugin's own caps on what a call answers (its config.json entry; issue 41). */
  outputs?: { readCapBytes?: number; maxOutputBytes?: number };
  /** Where results over the delivery cap are stored, and references in arguments are read (the session's state folder). */
  results?: ResultStore;
  /** Set when its host starts through the sandbox launcher (src/sandbox/): the layers, and what a limit did. */
  sandbox?: HostSandbox;
  /** How a "dynamic" gate's per-call lease is settled and served (issue 39 point 6); without it, a lease refuses the call. */
  leases?: Leases;
}

/** Per-call sandbox leases, settled by the session (which knows the effective sandbox) and served by host/lease-pool.ts. */
export interface Leases {
  /**
   * The lease intersected with the plugin's effective sandbox: the sandbox the call runs under, and
   * it in words for the prompt. Throws E_SANDBOX naming each entry that would widen it.
   */
  settle(lease: SandboxDeclaration): { sandbox: SandboxDeclaration; words: string };
  /** The command that starts a host under exactly `sandbox` (through the launcher), and its sandbox. */
  host(sandbox: SandboxDeclaration): { hostCommand: string[]; sandbox: HostSandbox };
  /** How long a leased host may wait for its next call before it is stopped (ms). */
  idleMs: number;
}

export interface InvokeOptions {
  /**
   * Decides the call when it needs permission: a function (a prompt, a policy) or a fixed answer.
   * Without one, such a call is denied by policy. "always" stores a grant when Always is offered.
   */
  permission?: PermissionHandler | PermissionAnswer;
  signal?: AbortSignal;
  /** Milliseconds before the call is abandoned with E_TIMEOUT. No deadline unless given. */
  timeoutMs?: number;
  /** Each progress report restarts the timeout, up to `maxMs` in all (default 10 × timeoutMs). */
  resetOnProgress?: boolean;
  maxMs?: number;
  onEvent?: (event: CallEvent) => void;
  /** The most bytes of its answer the parent reads (4 KiB to 64 MiB; default: the plugin's, else 64 MiB): past it, E_LIMIT. */
  readCapBytes?: number;
  /**
   * The most bytes of output.content the caller gets (0: no cap): over it, a head, a line and a tail,
   * the whole stored and referenced (`spilled`). Default: the plugin's maxOutputBytes, else
   * `defaultMaxOutputBytes`, a front end's own default (none in the library).
   */
  maxOutputBytes?: number;
  defaultMaxOutputBytes?: number;
}

export type PluginEventHooks = ProcessHooks;

/**
 * A change in what a plugin can serve: `quarantined` (it crashed too often; its tools fail for the
 * rest of the session), or `restarted` (a fresh plugin host replaced one that ended or was
 * replaced by `restart()`; same manifest, same tools).
 */
export type PluginChange = { kind: "quarantined"; error: CxError } | { kind: "restarted" };
