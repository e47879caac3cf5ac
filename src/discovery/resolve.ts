/**
 * Turning what a person typed into a plugin: a path to a library, to its sidecar, or to the
 * folder holding them (SPEC §6.1); for a Cortex plugin also its manifest.toml, or the folder
 * holding that (discovery/cortex.ts). Names (config, discovery) are resolved in discover.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { CxError } from "../errors.ts";
import type { PluginKind } from "../protocol/host-args.ts";
import { CORTEX_MANIFEST, type CortexManifest, hasCortexManifest, manifestOfLibrary, parseCortexManifest } from "./cortex.ts";
import { isCortexFile } from "./kind.ts";
import { declaresProcessTools, readProcessManifest } from "../protocol/cortex-process.ts";
import { isLibraryFile, isModuleFile, libraryOfSidecar, SIDECAR_SUFFIX, sidecarPathOf } from "./sidecar.ts";

export interface PluginLocation {
  /** Absolute path of the shared library (of the module, for a module plugin). */
  library: string;
  /** Absolute path of its sidecar (a Cortex plugin has none: where one would be). */
  sidecar: string;
  /** Its load set (SPEC §6.1): the folder the library sits in, or a Cortex plugin's manifest.toml. */
  folder: string;
  /** What it is, decided before any of its code runs: a library of the cxagent ABI (native), a
   * library exporting cortex_plugin_init (cortex), or a TypeScript/JavaScript module (module). */
  kind: PluginKind;
  /** A Cortex plugin's manifest.toml, when it has one. */
  cortexManifest?: string | null;
}

/**
 * Where a library found by its path is: a cxagent plugin when its sidecar is beside it, else a
 * Cortex plugin when its exports say so (its manifest.toml, when it has one, decides its folder).
 */
export function locationOf(library: string): PluginLocation {
  const sidecar = sidecarPathOf(library);
  // A module is named by its file name; a library by its sidecar, else by the exports it has.
  if (isModuleFile(library)) return { library, sidecar, folder: dirname(library), kind: "module" };
  if (existsSync(sidecar) || !isCortexFile(library)) return { library, sidecar, folder: dirname(library), kind: "native" };
  const manifest = manifestOfLibrary(library, readCortexManifest);
  return { library, sidecar, folder: manifest ? dirname(manifest) : dirname(library), kind: "cortex", cortexManifest: manifest };
}

/** Reads a manifest.toml from disk (the load reads it again, from the bytes it hashes); a process plugin's names no library. */
export function readCortexManifest(path: string): CortexManifest {
  const bytes = readFileSync(path);
  if (!declaresProcessTools(bytes)) return parseCortexManifest(bytes, path);
  const read = readProcessManifest(bytes);
  if (!read.ok) throw new CxError("E_MANIFEST", `the Cortex manifest ${path} is invalid: ${read.problems.map((p) => p.message).join("; ")}`, { hint: "fix the manifest.toml", details: { path } });
  return { path, name: read.plugin.name, version: read.plugin.version, description: read.plugin.description, library: null, abiVersion: null };
}

/**
 * The Cortex plugin a manifest.toml describes: the library its [native] section names. A manifest
 * that cannot be read still locates a plugin (its folder), so that loading or listing it says what
 * is wrong with it (session/inspect.ts reads it again, strictly, from the hashed bytes).
 */
export function locationOfCortexManifest(path: string): PluginLocation {
  // A process plugin (its [native] lists tools): the manifest is what it declares and what it runs.
  if (isProcessManifest(path)) return { library: path, sidecar: path, folder: dirname(path), kind: "cortex-process", cortexManifest: path };
  let library = path;
  try {
    library = readCortexManifest(path).library ?? path;
  } catch (error) {
    if (!(error instanceof CxError)) throw error;
  }
  return { library, sidecar: sidecarPathOf(library), folder: dirname(path), kind: "cortex", cortexManifest: path };
}

function isProcessManifest(path: string): boolean {
  try {
    return declaresProcessTools(readFileSync(path));
  } catch {
    return false;
  }
}

/** The plugin a file names: a library (or its sidecar's library), or a Cortex plugin's manifest.toml. */
export function locationOfFile(path: string): PluginLocation {
  return basename(path) === CORTEX_MANIFEST ? locationOfCortexManifest(path) : locationOf(path);
}

/** Resolves a path reference; throws E_NOT_FOUND when it names nothing usable. */
export function resolvePath(ref: string, cwd: string): PluginLocation {
  const path = resolve(cwd, ref);
  if (!existsSync(path)) {
    throw new CxError("E_NOT_FOUND", `no plugin at ${path}: nothing exists there`, {
      hint: "give the path of a plugin library, its .plugin.json sidecar, or the folder holding them",
    });
  }
  if (statSync(path).isDirectory()) return inFolder(path);
  if (basename(path) === CORTEX_MANIFEST) return locationOfCortexManifest(path);
  if (path.endsWith(SIDECAR_SUFFIX)) {
    const library = libraryOfSidecar(path);
    if (!library) {
      throw new CxError("E_NOT_FOUND", `the sidecar ${path} has no library beside it`, {
        hint: `build the plugin so that ${basename(path, SIDECAR_SUFFIX)}.so sits next to its sidecar`,
      });
    }
    return locationOf(library);
  }
  return locationOf(path);
}

/** The one plugin in a folder: a library (or a module) with a sidecar of the same stem, or the one a manifest.toml names. */
function inFolder(folder: string): PluginLocation {
  const names = readdirSync(folder).sort();
  const libraries = names.filter((n) => isLibraryFile(n) && !n.startsWith("."));
  const modules = names.filter((n) => isModuleFile(n) && !n.startsWith(".") && existsSync(sidecarPathOf(resolve(folder, n))));
  const paired = [
    ...libraries.filter((n) => existsSync(sidecarPathOf(resolve(folder, n)))),
    // a module only where no library has its sidecar (libraryOfSidecar's order)
    ...modules.filter((n) => !libraries.some((l) => sidecarPathOf(l) === sidecarPathOf(n))),
  ];
  if (paired.length === 0 && hasCortexManifest(folder)) return locationOfCortexManifest(resolve(folder, CORTEX_MANIFEST));
  const candidates = paired.length ? paired : libraries;
  if (candidates.length === 1) return locationOf(resolve(folder, candidates[0]!));
  if (candidates.length === 0) {
    const sidecars = names.filter((n) => n.endsWith(SIDECAR_SUFFIX));
    throw new CxError("E_NOT_FOUND", `the folder ${folder} holds no plugin library`, {
      hint: sidecars.length ? `it has ${sidecars.join(", ")}: build the library beside it (npm run examples builds the examples)` : "give the folder a plugin's library and its .plugin.json sidecar (or, for a Cortex plugin, its manifest.toml)",
    });
  }
  throw new CxError("E_INVALID_INPUT", `the folder ${folder} holds ${candidates.length} plugin libraries (${candidates.join(", ")})`, {
    hint: "name the library itself",
  });
}
