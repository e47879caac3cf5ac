/**
 * What cxagent needs to know about one kind of plugin, in one value: a kind is chosen once, when
 * a location is inspected (session/inspect.ts), and everything after asks its profile instead of
 * comparing the kind's name. Adding a kind is one module beside this one (native.ts, cortex.ts,
 * module.ts), its line in index.ts, and a starter in the plugin host (plugin-host/starters.ts).
 */
import type { PluginKind } from "../protocol/host-args.ts";
import type { EXPORT_OF } from "../protocol/wire.ts";

/** The files a load set kept in memory, as trust/hash.ts read them: what a kind loads comes from these. */
export interface KeptFiles {
  realFolder: string;
  /** The library's (or module's) path in the load set, or null when it is not in it. */
  libraryPath: string | null;
  kept: Map<string, Buffer>;
  links: Map<string, string>;
}

export interface KindProfile {
  readonly kind: PluginKind;
  /** What each request calls in the plugin, for messages ("cxagent_plugin_invoke", "invoke()"). */
  readonly exports: typeof EXPORT_OF;
  /** What to do about a load its plugin host refused, by the step that refused it (SPEC §5.1). */
  refusalHint(reason: string | undefined): string;
  /** What a result must look like, for a call that returned something else. */
  readonly badReplyHint: string;
  /** What a command's answer must look like, and where that is said. */
  readonly command: { readonly export: string; readonly hint: string };
  /** The manifest a plugin host described: who made it, and whether the host checked it already. */
  readonly described: { readonly by: string; readonly checkedByHost: boolean };
  /** How many calls may be out to one plugin host at once, unless the session says otherwise. */
  readonly poolCap: number;
  /** Added to the plugin host's environment under the session's own (host/runtime-tuning.ts). */
  readonly runtimeEnv: Readonly<Record<string, string>>;
  /** Whether the load-set hash keeps every file's bytes (the host loads the whole folder). */
  readonly keepsAllFiles: boolean;
  /** The bytes the plugin host loads, from the approved files kept in memory (never read again). */
  bytesToLoad(files: KeptFiles): Uint8Array | undefined;
  /** Whether the libraries the loader would map for it are planned and shipped (an ELF library's). */
  readonly plansLibraries: boolean;
  /** Whether a plugin host started before its plugin was known (host/prepared.ts) may serve it. */
  readonly preparedHost: boolean;
  /** Whether its plugin host gets a private snapshot folder to import the approved files from. */
  readonly snapshot: boolean;
  /** Whether it runs JavaScript that may start Workers (its config entry's "workerFolders" apply). */
  readonly workers: boolean;
  /**
   * Where its manifest is before it runs: its sidecar, or (a Cortex plugin) its manifest.toml and
   * library, when its tools are declared only once it runs.
   */
  readonly sidecar: boolean;
  /**
   * Where a plugin without a sidecar of its own declares its manifest before it runs, when it
   * does: a Cortex process plugin's manifest.toml (the location's library). Undefined otherwise.
   */
  readonly declaresTools?: string;
  /**
   * Whether its sandbox confines each call's process (a Cortex process plugin's commands), its
   * plugin host starting as it is; otherwise the sandbox launcher starts the host itself.
   */
  readonly sandboxesCalls?: boolean;
  /** Whether `cxagent check` can run it in a check-mode plugin host. */
  readonly checkable: boolean;
  /** Whether its load has a handshake (an ABI version to agree on); a module's has none, describe is its first answer. */
  readonly handshake: boolean;
  /** Its words for the CLI. */
  readonly words: KindWords;
}

export interface KindWords {
  /** The line naming what is loaded, in `describe`: "library: PATH". */
  source(path: string): string;
  /** A line under its entry in `list`, or null. */
  readonly listNote: string | null;
  /** How `load --timings` names a step, where it differs for this kind. */
  readonly steps: Readonly<Record<string, string>>;
  /** Its plugin host's start-up phases that are not an export's name, as a message says them ("it was in …"). */
  readonly phases: Readonly<Record<string, string>>;
}

/** The library as hashed: a native or Cortex plugin's host loads exactly these bytes. */
export function libraryBytesOf(files: KeptFiles): Buffer | undefined {
  return files.libraryPath === null ? undefined : files.kept.get(files.libraryPath);
}
