/**
 * Turning what a person typed into a plugin: a path to a library, to its sidecar, or to the
 * folder holding them (SPEC §6.1). Names (config, discovery) are resolved in discovery/index.ts.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { CxError } from "../errors.ts";
import { isLibraryFile, isModuleFile, libraryOfSidecar, pluginKindOf, SIDECAR_SUFFIX, sidecarPathOf } from "./sidecar.ts";

export interface PluginLocation {
  /** What the plugin is: a shared library of the cxagent ABI, or a TypeScript/JavaScript module. */
  kind: "native" | "module";
  /** Absolute path of the shared library (of the module, for a module plugin). */
  library: string;
  /** Absolute path of its sidecar. */
  sidecar: string;
  /** The folder the library sits in: its load set (SPEC §6.1). */
  folder: string;
}

export function locationOf(library: string): PluginLocation {
  return { kind: pluginKindOf(library), library, sidecar: sidecarPathOf(library), folder: dirname(library) };
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

/** The one plugin in a folder: a library (or a module) with a sidecar of the same stem. */
function inFolder(folder: string): PluginLocation {
  const names = readdirSync(folder).sort();
  const libraries = names.filter((n) => isLibraryFile(n) && !n.startsWith("."));
  const modules = names.filter((n) => isModuleFile(n) && !n.startsWith(".") && existsSync(sidecarPathOf(resolve(folder, n))));
  const paired = [
    ...libraries.filter((n) => existsSync(sidecarPathOf(resolve(folder, n)))),
    // a module only where no library has its sidecar (libraryOfSidecar's order)
    ...modules.filter((n) => !libraries.some((l) => sidecarPathOf(l) === sidecarPathOf(n))),
  ];
  const candidates = paired.length ? paired : libraries;
  if (candidates.length === 1) return locationOf(resolve(folder, candidates[0]!));
  if (candidates.length === 0) {
    const sidecars = names.filter((n) => n.endsWith(SIDECAR_SUFFIX));
    throw new CxError("E_NOT_FOUND", `the folder ${folder} holds no plugin library`, {
      hint: sidecars.length ? `it has ${sidecars.join(", ")}: build the library beside it (npm run examples builds the examples)` : "give the folder a plugin's library and its .plugin.json sidecar",
    });
  }
  throw new CxError("E_INVALID_INPUT", `the folder ${folder} holds ${candidates.length} plugin libraries (${candidates.join(", ")})`, {
    hint: "name the library itself",
  });
}
