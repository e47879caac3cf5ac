/**
 * Finding plugins (SPEC §6.1). Search folders, first match wins: each `pluginPaths` entry, then
 * `<project>/.cxagent/plugins`, then `<config>/plugins`. In each folder a library directly in it
 * comes first, then each immediate subfolder in byte order; never deeper; dot folders skipped.
 * The folder a library sits in is its load set.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, isAbsolute, join, resolve } from "node:path";
import { CxError, isCxError } from "../errors.ts";
import { didYouMean } from "../suggest.ts";
import type { Config, PluginConfig } from "./config.ts";
import { expandPath } from "./paths.ts";
import { CORTEX_MANIFEST, hasCortexManifest } from "./cortex.ts";
import { locationOf, locationOfCortexManifest, locationOfFile, type PluginLocation, readCortexManifest, resolvePath } from "./resolve.ts";
import { isLibraryFile, isModuleFile, libraryOfSidecar, SIDECAR_SUFFIX } from "./sidecar.ts";

export interface SearchFolder {
  path: string;
  origin: "pluginPaths" | "project" | "config";
}

export interface Found extends PluginLocation {
  /** The name discovery knows it by: the stem of its sidecar. */
  name: string;
  origin: SearchFolder["origin"];
}

export function searchFolders(config: Config, projectDir: string, configDir: string): SearchFolder[] {
  const folders: SearchFolder[] = config.pluginPaths.map((p) => {
    const expanded = expandPath(p);
    return { path: isAbsolute(expanded) ? expanded : resolve(projectDir, expanded), origin: "pluginPaths" as const };
  });
  folders.push({ path: join(projectDir, ".cxagent", "plugins"), origin: "project" });
  folders.push({ path: join(configDir, "plugins"), origin: "config" });
  return folders;
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function listSorted(dir: string): string[] {
  try {
    return readdirSync(dir).sort(byteOrder);
  } catch {
    return [];
  }
}

/** Plugins directly in `dir`: a sidecar with a library of the same stem; a Cortex plugin's manifest.toml. */
function pluginsIn(dir: string): (PluginLocation & { name: string })[] {
  const plugins = listSorted(dir)
    .filter((n) => n.endsWith(SIDECAR_SUFFIX) && !n.startsWith("."))
    .map((n) => libraryOfSidecar(join(dir, n)))
    .filter((l): l is string => l !== null)
    .map(locationOf)
    .map((l) => ({ ...l, name: l.sidecar.slice(l.folder.length + 1, -SIDECAR_SUFFIX.length) }));
  const cortex = cortexIn(dir);
  return cortex ? [...plugins, cortex] : plugins;
}

/**
 * The Cortex plugin whose manifest.toml is in `dir`, named by it. One whose manifest cannot be
 * read is still found, under its folder's name, so that listing or loading it says what is wrong.
 */
function cortexIn(dir: string): (PluginLocation & { name: string }) | null {
  if (!hasCortexManifest(dir)) return null;
  const path = join(dir, CORTEX_MANIFEST);
  let name = basename(dir);
  try {
    name = readCortexManifest(path).name;
  } catch (error) {
    if (!isCxError(error)) throw error;
  }
  return { ...locationOfCortexManifest(path), name };
}

/** Every plugin in the search folders, in search order; a later one of the same name is shadowed. */
export function discoverAll(folders: SearchFolder[]): { found: Found[]; shadowed: Found[] } {
  const found: Found[] = [];
  const shadowed: Found[] = [];
  const seen = new Set<string>();
  for (const folder of folders) {
    if (!isDirectory(folder.path)) continue;
    const candidates = [
      ...pluginsIn(folder.path),
      ...listSorted(folder.path)
        .filter((n) => !n.startsWith(".") && isDirectory(join(folder.path, n)))
        .flatMap((n) => pluginsIn(join(folder.path, n))),
    ];
    for (const { name, ...location } of candidates) {
      const entry = { ...location, name, origin: folder.origin };
      if (seen.has(name)) shadowed.push(entry);
      else {
        seen.add(name);
        found.push(entry);
      }
    }
  }
  return { found, shadowed };
}

/**
 * Finds the file a config entry names: directly in a search folder first, then one level down.
 * A Cortex plugin's entry may name its `manifest.toml`, which every Cortex plugin has: then only
 * a manifest.toml that gives the entry's name counts.
 */
export function findFile(file: string, folders: SearchFolder[], name?: string): PluginLocation | null {
  const fits = (path: string) => {
    if (file !== CORTEX_MANIFEST || name === undefined) return true;
    try {
      return readCortexManifest(path).name === name;
    } catch (error) {
      if (isCxError(error)) return false;
      throw error;
    }
  };
  for (const folder of folders) {
    if (!isDirectory(folder.path)) continue;
    const direct = join(folder.path, file);
    if (existsSync(direct) && fits(direct)) return locationOfFile(direct);
    for (const sub of listSorted(folder.path)) {
      if (sub.startsWith(".")) continue;
      const nested = join(folder.path, sub, file);
      if (existsSync(nested) && isDirectory(join(folder.path, sub)) && fits(nested)) return locationOfFile(nested);
    }
  }
  return null;
}

/** The folder a config entry pins (`path`), as an absolute path; null when it pins none. */
export function pinnedFolder(entry: PluginConfig, projectDir: string): string | null {
  if (entry.path === undefined) return null;
  const expanded = expandPath(entry.path);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(projectDir, expanded);
}

/**
 * Where a config entry's plugin is: in its pinned folder; else the first of the user's own search
 * folders (pluginPaths and the config folder) holding its file. A project's .cxagent/plugins is
 * not searched for a config entry: a plugin a project ships never takes the user's settings
 * unless the entry pins it there.
 */
export function configuredLocation(entry: PluginConfig, folders: SearchFolder[], projectDir: string, name?: string): PluginLocation | null {
  const pinned = pinnedFolder(entry, projectDir);
  if (pinned !== null) return existsSync(join(pinned, entry.file)) ? locationOfFile(join(pinned, entry.file)) : null;
  return findFile(entry.file, folders.filter((f) => f.origin !== "project"), name);
}

export type Resolved = PluginLocation & { configName: string | null; how: "config" | "path" | "discovery" };

/**
 * Resolves what a person typed, in SPEC §6.1's order: a name in config.json, a path to a library,
 * sidecar or folder, a name found by discovery.
 */
export function resolveReference(ref: string, config: Config, folders: SearchFolder[], cwd: string): Resolved {
  const configured = config.plugins.get(ref);
  if (configured) {
    const location = configuredLocation(configured, folders, cwd, ref);
    if (!location) throw configuredNowhere(ref, configured, folders, cwd);
    return { ...location, configName: ref, how: "config" };
  }
  const asPath = resolve(cwd, ref);
  if (existsSync(asPath) || ref.includes("/") || ref.endsWith(SIDECAR_SUFFIX) || isLibraryFile(ref) || isModuleFile(ref)) {
    return { ...resolvePath(ref, cwd), configName: null, how: "path" };
  }
  const { found } = discoverAll(folders);
  const match = found.find((f) => f.name === ref);
  if (match) return { ...match, configName: null, how: "discovery" };
  const names = [...config.plugins.keys(), ...found.map((f) => f.name)];
  throw new CxError("E_NOT_FOUND", `no plugin named '${ref}'${didYouMean(ref, names)}`, {
    hint: `it is not in config.json, not a path, and not in the plugin folders (${folders.map((f) => f.path).join(", ")})`,
    next: { do: "list-plugins" },
  });
}

export function configuredNowhere(name: string, entry: PluginConfig, folders: SearchFolder[], cwd: string): CxError {
  const pinned = pinnedFolder(entry, cwd);
  if (pinned !== null) {
    return new CxError("E_NOT_FOUND", `plugin '${name}' is configured with path ${pinned} and file '${entry.file}', and there is no such file`, {
      hint: `put the plugin's library at ${join(pinned, entry.file)}, or change "path" in config.json`,
    });
  }
  const searched = folders.filter((f) => f.origin !== "project");
  const inProject = findFile(entry.file, folders.filter((f) => f.origin === "project"), name);
  return new CxError("E_NOT_FOUND", `plugin '${name}' is configured with file '${entry.file}', which is in none of the plugin folders`, {
    hint: inProject
      ? `the project has one at ${inProject.library}, but a project's plugin never takes a config.json entry unless the entry pins it: add "path": "${inProject.folder}" to the entry if you mean that one`
      : `searched: ${searched.map((f) => f.path).join(", ")}`,
  });
}
