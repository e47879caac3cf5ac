/**
 * Everything cxagent knows about a plugin before any of its code runs, computed in one place and
 * from one read of its folder: where it is, what its sidecar declares, the load-set hash and file
 * list, whether that exact load set is approved at that folder (and what changed if not), the
 * same-named plugins approved elsewhere, the other plugins sharing its folder, the config entry
 * whose settings it receives or the one it shadows, whether it is enabled, which of its tools the
 * config files hide or make ask (session/selection.ts), and which libraries the loader would map
 * for it. `list`, `describe`, `approve`, `instructions` and every load use it.
 */
import { projectSandbox, type SandboxFacts, sandboxFacts, sandboxRefusal } from "./sandbox-facts.ts";
import { type Collision, collisionsOf } from "./names.ts";
import { basename, dirname, relative, sep } from "node:path";
import { existsSync, realpathSync } from "node:fs";
import { CxError, isCxError } from "../errors.ts";
import type { Config, PluginConfig } from "../discovery/config.ts";
import { configuredLocation, type Resolved, resolveReference, type SearchFolder } from "../discovery/discover.ts";
import type { PluginLocation } from "../discovery/resolve.ts";
import type { CheckedSchemas } from "../json-schema/checked.ts";
import { LIBRARY_EXTENSIONS, MODULE_EXTENSIONS, noSidecar, parseSidecar, SIDECAR_SUFFIX } from "../discovery/sidecar.ts";
import { checkManifest, CONTRACT_CURRENT, type Manifest, PLUGIN_NAME_RULE } from "../protocol/manifest.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import { type CortexManifest, nameFromLibrary, parseCortexManifest, sameFile } from "../discovery/cortex.ts";
import { isCortexLibrary } from "../discovery/kind.ts";
import { type KindProfile, profileOf } from "../kinds/index.ts";
import { type ProcessFacts, processFactsOf } from "./process-facts.ts";
import { describedKey, readDescribed } from "./described.ts";
import { approvedElsewhere, readApprovalsOf, recordApproval, type Trust, trustOf } from "../trust/approvals.ts";
import type { TrustRequest } from "../trust/check.ts";

/** How a trust state reads to a person: what changed, and where else a same-named plugin is approved. */
export { describeChanges, otherFolderSentence } from "../trust/check.ts";
export type { Changes } from "../trust/approvals.ts";
import { type DependencyPlan, planDependencies } from "../trust/dependencies.ts";
import { type LoadSet, libraryBytes, loadSetHash } from "../trust/hash.ts";
import type { ProjectConfig } from "../discovery/project-config.ts";
import type { RuleSource } from "../host/tool-policy.ts";
import { configSelection, disabledBy, type Selection } from "./selection.ts";

export interface InspectContext {
  config: Config;
  /** Where `config` was read from (named by every rule it holds). */
  configFile: string;
  /** The project's .cxagent/config.json, when there is one. */
  project: ProjectConfig | null;
  searchFolders: SearchFolder[];
  /** The project folder: where plugin hosts run and relative paths start. */
  cwd: string;
  stateDir: string;
  /** The plugin host's environment (its LD_LIBRARY_PATH decides where the loader looks). */
  env: Record<string, string | undefined>;
  /** The manifests of the plugins the session has loaded: the names they hold. */
  loaded: readonly Manifest[];
  /** The inputSchemas found valid before (json-schema/checked.ts), one record per session. */
  checkedSchemas: CheckedSchemas;
}

/** The config entry whose settings a plugin receives: its name and its settings' keys, never values. */
export interface SettingsSource {
  entry: string;
  keys: string[];
  /** The folder the entry pins, when it does. */
  pinned: string | null;
}

/** A config entry of the same name that is bound to another folder: loading this plugin is refused. */
export interface Shadowing {
  entry: string;
  /** Where the entry's own plugin is (real path), or null when it is nowhere. */
  folder: string | null;
  pinned: boolean;
}

export interface Inspection {
  /** The name the sidecar declares (a Cortex plugin: its manifest.toml, else its library's file name). */
  name: string;
  location: Resolved;
  /**
   * What it declares before it runs: its sidecar. A Cortex plugin declares its tools only when
   * it runs, so its manifest here has none (see `cortex`); its load shows them.
   */
  manifest: Manifest;
  /** Which ABI it speaks. */
  kind: PluginKind;
  /** Its kind's profile (kinds/), chosen here once: what every later step asks instead of the kind. */
  profile: KindProfile;
  /** What is known of a Cortex plugin before it runs, and from where. */
  cortex: CortexFacts | null;
  /** What a Cortex process plugin's tools run (its manifest.toml). */
  process: ProcessFacts | null;
  /**
   * A plugin without a sidecar: what it described when last started from these bytes, with these
   * settings, by this cxagent (session/described.ts), or null. `manifest` stays what is declared.
   */
  described: Manifest | null;
  loadSet: LoadSet;
  trust: Trust;
  /** Folders where a plugin of the same name is approved: a different plugin from this one. */
  approvedElsewhere: string[];
  /** Other plugins whose valid sidecar and library are in this load set. */
  sharesWith: string[];
  settings: SettingsSource | null;
  shadowing: Shadowing | null;
  /** false when config.json or the project's config says enabled: false for it. */
  enabled: boolean;
  /** Where it is disabled: the user's config.json (a load with `once` overrides it), the project's (nothing does). */
  disabled: { user: RuleSource | null; project: RuleSource | null };
  /** Which of its tools the config files hide, and which they make ask on every call. */
  selection: Selection;
  /** Its tool and command names already held by a built-in or a plugin the session has loaded. */
  collisions: Collision[];
  /** Its sandbox: declared, imposed by config.json, the effective intersection (null: unconfined). */
  sandbox: SandboxFacts;
  /** The libraries the loader would map, or why it must not load. */
  dependencies: { plan: DependencyPlan; problem: null } | { plan: null; problem: CxError };
}

/** Resolves a reference (config name, path, discovered name) and inspects what it names. */
export function inspect(ref: string, context: InspectContext): Inspection {
  return inspectLocation(resolveReference(ref, context.config, context.searchFolders, context.cwd), context);
}

export function inspectLocation(location: Resolved, context: InspectContext): Inspection {
  // The one place the kind is asked: from here on, its profile says what differs.
  const profile = profileOf(location.kind);
  if (!profile.sidecar) requireCortexLibrary(location);
  // A module plugin imports from the bytes read here, so every file of its folder is kept.
  const loadSet = loadSetHash(location.folder, location.library, { keepAll: profile.keepsAllFiles });
  const declared = profile.declaresTools ? processFactsOf(location.library, keptBytes(loadSet, location.library)) : null;
  const { manifest, cortex } = declared ? { manifest: declared.manifest, cortex: null } : profile.sidecar ? { manifest: parseSidecar(sidecarText(location, loadSet), location.sidecar, context.checkedSchemas), cortex: null } : cortexFactsOf(location, loadSet);
  if (location.configName !== null && location.configName !== manifest.name) {
    const namedBy = cortex ? (cortex.manifest ? `the Cortex manifest ${cortex.manifest}` : `the file name of ${location.library}`) : `the sidecar ${location.sidecar}`;
    throw new CxError("E_CONFIG", `config.json configures plugin '${location.configName}', but ${namedBy} names it '${manifest.name}'`, {
      hint: `rename the entry in config.json to '${manifest.name}'`,
    });
  }
  const approvals = readApprovalsOf(context.stateDir, manifest.name);
  const entry = context.config.plugins.get(manifest.name);
  const binding = entry ? bindingOf(manifest.name, entry, loadSet.realFolder, context) : { settings: null, shadowing: null };
  // By name, also for a plugin that shadows the entry: taking tools away is never the wrong plugin's gain.
  const rules = { name: manifest.name, userFile: context.configFile, user: entry, project: context.project };
  const disabled = disabledBy(rules);
  // A shadowing plugin is refused anyway; the entry's enabled: false is not about it.
  if (binding.shadowing) disabled.user = null;
  let dependencies: Inspection["dependencies"];
  try {
    // The model is of glibc's loader, for ELF files; elsewhere the system's loader decides alone.
    // A module maps no library: what it imports is held to its folder by its plugin host.
    const plan = process.platform === "linux" && profile.plansLibraries
      ? planDependencies({ library: location.library, realFolder: loadSet.realFolder, bytesOf: (p) => loadSet.kept.get(p), env: context.env, cwd: context.cwd })
      : { inSet: [], system: [] };
    dependencies = { plan, problem: null };
  } catch (error) {
    if (!isCxError(error)) throw error;
    dependencies = { plan: null, problem: error };
  }
  const described = profile.sidecar ? null : readDescribed(context.stateDir, describedKey(loadSet.hash, settingsValue(binding.settings, context.config)));
  const selection = configSelection((described ?? manifest).tools, rules);
  return {
    name: manifest.name,
    location,
    manifest,
    kind: profile.kind,
    profile,
    cortex,
    process: declared?.process ?? null,
    described,
    loadSet,
    trust: trustOf(approvals, manifest.name, loadSet.realFolder, loadSet.hash, loadSet.files),
    approvedElsewhere: approvedElsewhere(approvals, manifest.name, loadSet.realFolder),
    sharesWith: sharersOf(loadSet, location),
    settings: binding.settings,
    shadowing: binding.shadowing,
    enabled: disabled.user === null && disabled.project === null,
    disabled,
    // A Cortex plugin's tools are not known yet (unless described before): no pattern can be said to match none of them.
    selection: cortex && !described ? { ...selection, policy: { ...selection.policy, unmatched: [] } } : selection,
    collisions: collisionsOf(manifest, context.loaded),
    sandbox: sandboxFacts(manifest.sandbox, { entry, configFile: context.configFile, project: projectSandbox(context.project, manifest.name) }, context.config.sandboxRequired === true),
    dependencies,
  };
}

/** The settings a load without its own receives (session/pipeline.ts): its config entry's, else none. */
function settingsValue(source: SettingsSource | null, config: Config): unknown {
  return (source === null ? undefined : config.plugins.get(source.entry)?.settings) ?? {};
}

/** What is known of a Cortex plugin before it runs. */
export interface CortexFacts {
  /** Its manifest.toml, or null: then only its library's file name is known. */
  manifest: string | null;
  description: string | null;
  /** Whether its manifest.toml gave a version (else the manifest here says "(version unknown)"). */
  versionDeclared: boolean;
}

/** The version a Cortex plugin without a manifest.toml has until it runs. */
export const UNDECLARED_VERSION = "(version unknown)";

function requireCortexLibrary(location: Resolved) {
  if (existsSync(location.library)) return;
  throw new CxError("E_NOT_FOUND", `the library ${location.library} of the Cortex plugin at ${location.folder} does not exist`, {
    hint: location.cortexManifest ? `build the plugin so that its library is where [native] library in ${location.cortexManifest} says` : "build the plugin's library",
  });
}

/**
 * A Cortex plugin's name, version and description, from the manifest.toml bytes the hash read
 * (or its library's file name): the manifest before it runs has no tools, no instructions.
 */
function cortexFactsOf(location: Resolved, loadSet: LoadSet): { manifest: Manifest; cortex: CortexFacts } {
  const changed = (what: string) => new CxError("E_LOAD", `${what} changed while the plugin's folder was being read`, { hint: "try again once nothing is writing to it" });
  let declared: CortexManifest | null = null;
  const path = location.cortexManifest ?? null;
  if (path) {
    const bytes = keptBytes(loadSet, path);
    if (!bytes) throw changed(path);
    declared = parseCortexManifest(bytes, path);
    if (declared.library === null) {
      throw new CxError("E_MANIFEST", `the Cortex manifest ${path} names no [native] library`, {
        hint: "cxagent loads trusted native Cortex plugins: a manifest.toml whose [native] library is a shared library exporting cortex_plugin_init",
      });
    }
    if (!sameFile(declared.library, location.library)) {
      throw new CxError("E_MANIFEST", `the Cortex manifest ${path} names the library ${relative(dirname(path), declared.library)}, not ${relative(dirname(path), location.library)}`, {
        hint: `name the plugin by its folder, ${dirname(path)}, to load the library its manifest names; a library of another plugin does not belong in that folder`,
      });
    }
  } else {
    const bytes = libraryBytes(loadSet);
    if (!bytes || !isCortexLibrary(bytes)) throw changed(location.library);
  }
  const name = declared?.name ?? nameFromLibrary(location.library);
  if (name === null) {
    throw new CxError("E_MANIFEST", `the Cortex plugin ${location.library} has no manifest.toml, and its file name is not a plugin name (${PLUGIN_NAME_RULE})`, {
      hint: `put a manifest.toml beside it with name = "<plugin name>", version and [native] library = "${basename(location.library)}", or rename the file`,
    });
  }
  const manifest: Manifest = {
    pluginContract: CONTRACT_CURRENT,
    name,
    version: declared?.version ?? UNDECLARED_VERSION,
    instructions: null,
    spawns: false,
    client: false,
    tools: [],
    commands: [],
    ...(declared?.sandbox ? { sandbox: declared.sandbox } : {}),
  };
  return { manifest, cortex: { manifest: path, description: declared?.description ?? null, versionDeclared: declared !== null } };
}

/** The hashed bytes of a file in the load set, by its absolute path. */
function keptBytes(loadSet: LoadSet, path: string): Buffer | undefined {
  try {
    return loadSet.kept.get(relative(loadSet.realFolder, realpathSync(path)).split(sep).join("/"));
  } catch {
    return undefined;
  }
}

/** The sidecar's bytes as the hash read them. */
function sidecarText(location: PluginLocation, loadSet: LoadSet): string {
  let path: string;
  try {
    path = relative(loadSet.realFolder, realpathSync(location.sidecar)).split(sep).join("/");
  } catch {
    throw noSidecar(location.sidecar, location.library);
  }
  const bytes = loadSet.kept.get(path);
  if (!bytes) throw noSidecar(location.sidecar, location.library);
  return bytes.toString("utf8");
}

/**
 * Whether a plugin at `realFolder` is the one a config entry of its name means. The entry means
 * the plugin in its pinned folder, else the one found in the user's own search folders; any other
 * folder holding a plugin of that name shadows it and gets neither its settings nor its load.
 */
function bindingOf(name: string, entry: PluginConfig, realFolder: string, context: InspectContext): { settings: SettingsSource | null; shadowing: Shadowing | null } {
  const meant = configuredLocation(entry, context.searchFolders, context.cwd, name);
  let meantFolder: string | null = null;
  try {
    meantFolder = meant ? realpathSync(meant.folder) : null;
  } catch {
    meantFolder = null;
  }
  if (meantFolder !== realFolder) return { settings: null, shadowing: { entry: name, folder: meantFolder, pinned: entry.path !== undefined } };
  const settings = entry.settings;
  const keys = settings !== null && typeof settings === "object" && !Array.isArray(settings) ? Object.keys(settings) : [];
  return { settings: { entry: name, keys, pinned: entry.path === undefined ? null : meantFolder }, shadowing: null };
}

/** Plugins sharing a load set: valid sidecars in it with a library of the same stem beside them. */
function sharersOf(loadSet: LoadSet, location: PluginLocation): string[] {
  let own: string | null = null;
  try {
    own = relative(loadSet.realFolder, realpathSync(location.sidecar)).split(sep).join("/");
  } catch {
    own = null;
  }
  const present = new Set(loadSet.files.map((f) => f.path));
  const names: string[] = [];
  for (const [path, bytes] of loadSet.kept) {
    if (!path.endsWith(SIDECAR_SUFFIX) || path === own || basename(path).startsWith(".")) continue;
    const stem = path.slice(0, -SIDECAR_SUFFIX.length);
    if (![...LIBRARY_EXTENSIONS, ...MODULE_EXTENSIONS].some((ext) => present.has(stem + ext))) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString("utf8"));
    } catch {
      continue;
    }
    const checked = checkManifest(parsed);
    if (checked.ok) names.push(checked.manifest.name);
  }
  return [...new Set(names)];
}

/** What the trust prompt and the refusal show, from an inspection. */
export function trustRequestOf(inspection: Inspection): TrustRequest {
  const { trust, loadSet, manifest, location } = inspection;
  return {
    name: inspection.name,
    manifest,
    kind: inspection.kind,
    cortex: inspection.cortex,
    process: inspection.process,
    library: location.library,
    folder: location.folder,
    realFolder: loadSet.realFolder,
    hash: loadSet.hash,
    state: trust.state,
    changes: trust.state === "changed" ? trust.changes : null,
    approvedElsewhere: inspection.approvedElsewhere,
    sharesWith: inspection.sharesWith,
    settings: inspection.settings,
    ships: inspection.dependencies.plan?.inSet.map((d) => d.path) ?? [],
  };
}

/** Records that a person approved exactly this inspected load set at its folder. */
/**
 * The bytes the plugin host loads, from the approved files kept in memory (never read again):
 * a native or Cortex library as hashed, or a module plugin's every file as one archive.
 */
export function bytesToLoad(inspection: Inspection): Uint8Array | undefined {
  return inspection.profile.bytesToLoad(inspection.loadSet);
}

export function recordInspected(inspection: Inspection, stateDir: string) {
  return recordApproval(stateDir, { plugin: inspection.name, hash: inspection.loadSet.hash, realFolder: inspection.loadSet.realFolder, files: inspection.loadSet.files });
}

/**
 * Why a plugin must not load as it is, before trust is even asked: it shadows a config entry of
 * its name, or its libraries would come from outside what is approved. Null when nothing stops it.
 */
export function refusalOf(inspection: Inspection): CxError | null {
  const s = inspection.shadowing;
  if (s) {
    const here = inspection.loadSet.realFolder;
    const meant = s.folder === null ? `the plugin it names is in none of the plugin folders` : `its plugin is at ${s.folder}`;
    return new CxError("E_SHADOWED", `plugin '${inspection.name}' at ${here} was refused: config.json has an entry '${s.entry}' and ${meant}${s.pinned ? " (pinned with \"path\")" : ""}; this is a different plugin of the same name, so it gets neither that entry's settings nor a load`, {
      hint: s.pinned || s.folder !== null
        ? `load the configured one with 'cxagent load ${s.entry}'; to use this one instead, set "path": "${here}" in that entry, or rename one of the two`
        : `set "path": "${here}" in the '${s.entry}' entry of config.json if this is the plugin it means`,
      details: { plugin: inspection.name, folder: here, configured: s.folder, pinned: s.pinned },
    });
  }
  if (!inspection.dependencies.problem) return sandboxRefusal(inspection.name, inspection.sandbox);
  return inspection.dependencies.problem;
}
