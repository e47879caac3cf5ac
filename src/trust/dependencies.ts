/**
 * Which libraries the loader will map for a plugin, decided in the parent before any process
 * exists (SPEC §6.3). For each library the plugin's library needs (DT_NEEDED), transitively, we
 * search as glibc's ld.so would — DT_RPATH when there is no DT_RUNPATH, LD_LIBRARY_PATH,
 * DT_RUNPATH, the cache, the default folders; `$ORIGIN` is the folder the object sits in — and
 * classify what it finds:
 *
 * - in the load set: it was hashed with the plugin, so the plugin host loads it from a sealed copy
 *   of those same bytes, before the library that needs it. glibc then matches the later DT_NEEDED
 *   by the copy's soname and never opens the file, so the copy's DT_SONAME must be the name it is
 *   needed by;
 * - a system library (a default folder or one the cache covers), or one the plugin host already
 *   has loaded: allowed, loaded as the system has it;
 * - anything else is refused, naming the library, the dependency and the path. So is a search
 *   folder a plugin named (RPATH, RUNPATH) outside the load set that the loader would look in
 *   before the system's: a file put there after approval would run unapproved.
 */
import { realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { CxError } from "../errors.ts";
import { type DynamicInfo, ElfError, readDynamic } from "../elf/elf.ts";
import { systemLoader } from "./loader.ts";

export interface InSetDependency {
  /** Its path inside the load set (`/` separators): its bytes are the hashed ones. */
  path: string;
  /** The name it is needed by, which is its DT_SONAME. */
  soname: string;
}

export interface DependencyPlan {
  /** Libraries from the load set, in the order the plugin host loads them (each after what it needs). */
  inSet: InSetDependency[];
  /** Libraries the loader will take from the system, by name. */
  system: { name: string; path: string }[];
}

export interface PlanInput {
  /** The library as found (its folder is its `$ORIGIN`). */
  library: string;
  /** The load set's folder, real path. */
  realFolder: string;
  /** The hashed bytes of a file in the load set, by relative path; undefined when not kept. */
  bytesOf: (path: string) => Uint8Array | undefined;
  /** The plugin host's environment (LD_LIBRARY_PATH) and working folder (relative search paths). */
  env: Record<string, string | undefined>;
  cwd: string;
}

const SHIPPING = "see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h";

/** Plans the load; throws E_LOAD naming the library, the dependency and the path it would come from. */
export function planDependencies(input: PlanInput): DependencyPlan {
  const loader = systemLoader();
  const plan: DependencyPlan = { inSet: [], system: [] };
  const relativeOf = (real: string): string | null => {
    if (real !== input.realFolder && !real.startsWith(input.realFolder + sep)) return null;
    return relative(input.realFolder, real).split(sep).join("/");
  };
  const state = new Map<string, "visiting" | "done">();
  const sonames = new Map<string, string>(); // soname → in-set path that holds it

  const dynamicOf = (asFound: string, path: string): DynamicInfo => {
    const bytes = input.bytesOf(path);
    // Not read when the folder was hashed: it appeared (or changed kind) since.
    if (!bytes) throw new CxError("E_LOAD", `${asFound} changed while the plugin's folder was being checked`, { hint: "try again" });
    try {
      return readDynamic(bytes);
    } catch (error) {
      if (!(error instanceof ElfError)) throw error;
      throw new CxError("E_LOAD", `${asFound} cannot be loaded: ${error.message}`, {
        hint: "a plugin library and every library it ships must be a 64-bit ELF shared object built for this machine",
        details: { library: asFound },
      });
    }
  };

  const visit = (asFound: string, path: string, chain: string[]) => {
    state.set(path, "visiting");
    const info = dynamicOf(asFound, path);
    const origin = dirname(asFound);
    for (const name of info.needed) {
      const found = search(name, info, origin, asFound, input, loader);
      if (found.kind === "host") {
        plan.system.push({ name, path: "(already loaded by the plugin host)" });
        continue;
      }
      const real = found.kind === "file" ? found.real : null;
      const inSet = real === null ? null : relativeOf(real);
      if (inSet === null && found.risky.length) {
        const { dir, source } = found.risky[0]!;
        throw new CxError(
          "E_LOAD",
          `${asFound} has the loader look for ${name} in ${dir} (its ${source}) before the system's folders: a folder it names by path, not through $ORIGIN, and not a system folder, so a file put there after you approve the plugin would run`,
          { hint: `relink ${shortName(asFound)} with only '$ORIGIN' paths in its ${source} (for example -Wl,-rpath,'$ORIGIN'), or ship ${name} in the plugin's folder; ${SHIPPING}`, details: { library: asFound, dependency: name, path: dir } },
        );
      }
      if (found.kind === "missing") {
        throw new CxError("E_LOAD", `${asFound} needs ${name}, which the loader would find nowhere (searched: ${found.searched.join(", ") || "no folder"})`, {
          hint: `ship ${name} inside the plugin's folder and link ${shortName(asFound)} with -Wl,-rpath,'$ORIGIN'; ${SHIPPING}`,
          details: { library: asFound, dependency: name },
        });
      }
      if (inSet === null) {
        if (found.system) {
          plan.system.push({ name, path: found.path });
          continue;
        }
        throw new CxError(
          "E_LOAD",
          `${asFound} needs ${name}, which the loader would load from ${found.path}: outside the plugin's folder ${input.realFolder} and not a system library, so it could change after you approve the plugin`,
          { hint: `ship ${name} inside the plugin's folder and link ${shortName(asFound)} with -Wl,-rpath,'$ORIGIN'; ${SHIPPING}`, details: { library: asFound, dependency: name, path: found.path } },
        );
      }
      if (name.includes("/")) {
        throw new CxError("E_LOAD", `${asFound} needs the plugin's own ${inSet} by its path ('${name}'), so the loader would open it again from disk instead of the approved copy`, {
          hint: `link it by name with -Wl,-rpath,'$ORIGIN' instead of by path; ${SHIPPING}`,
          details: { library: asFound, dependency: name },
        });
      }
      if (state.get(inSet) === "visiting" || inSet === chain[0]) {
        throw new CxError("E_LOAD", `the plugin's libraries need each other in a cycle (${[...chain, inSet].join(" → ")}), which cxagent cannot load from approved copies`, {
          hint: "break the cycle: a library the plugin ships must not need, directly or not, a library that needs it",
          details: { library: asFound, dependency: name },
        });
      }
      const soname = dynamicOf(found.path, inSet).soname;
      if (soname !== name) {
        throw new CxError(
          "E_LOAD",
          `${asFound} needs ${name}, found in the plugin's folder as ${inSet}, but ${soname === null ? "that library has no DT_SONAME" : `that library's DT_SONAME is '${soname}'`}; the loader matches the approved copy by its soname, so the two must be equal`,
          { hint: `link ${inSet} with -Wl,-soname,${name}; ${SHIPPING}`, details: { library: asFound, dependency: name, path: found.path } },
        );
      }
      const holder = sonames.get(soname);
      if (holder !== undefined && holder !== inSet) {
        throw new CxError("E_LOAD", `two of the plugin's libraries, ${holder} and ${inSet}, both have the soname '${soname}'; the loader would use only the first`, {
          hint: "give each library the plugin ships a soname of its own",
        });
      }
      sonames.set(soname, inSet);
      if (state.get(inSet) === "done") continue;
      visit(found.path, inSet, [...chain, inSet]);
      plan.inSet.push({ path: inSet, soname });
    }
    state.set(path, "done");
  };

  const real = realFile(input.library);
  if (real === null) throw new CxError("E_LOAD", `${input.library} changed while it was being checked`, { hint: "try again" });
  const libraryReal = relativeOf(real);
  if (libraryReal === null) throw new CxError("E_LOAD", `the library ${input.library} is not inside its own folder ${input.realFolder}`);
  visit(input.library, libraryReal, [libraryReal]);
  return plan;
}

type Found =
  | { kind: "file"; path: string; real: string; system: boolean; risky: SearchDir[] }
  | { kind: "host" }
  | { kind: "missing"; searched: string[]; risky: SearchDir[] };

interface SearchDir {
  dir: string;
  source: "DT_RPATH" | "DT_RUNPATH" | "LD_LIBRARY_PATH" | "default folders";
  /**
   * A folder a plugin named that the loader searches on disk: not `$ORIGIN`-based (for an approved
   * copy `$ORIGIN` is /proc/self/fd, which holds no library) and not a system folder. A file
   * created there between the hash and the load would be mapped.
   */
  risky: boolean;
}

/** Where ld.so would find `name` for an object with `info`, loaded from a file in `origin`. */
function search(name: string, info: DynamicInfo, origin: string, asFound: string, input: PlanInput, loader: ReturnType<typeof systemLoader>): Found {
  const file = (path: string, risky: SearchDir[], system?: boolean): Found | null => {
    const real = realFile(path);
    return real === null ? null : { kind: "file", path, real, system: system ?? loader.isSystemDir(dirname(real)), risky };
  };
  if (name.includes("/")) {
    const path = isAbsolute(name) ? name : resolve(input.cwd, name);
    return file(path, []) ?? { kind: "missing", searched: [path], risky: [] };
  }
  // glibc matches a name against the sonames of objects already loaded before it searches.
  if (loader.hostLoaded.has(name)) return { kind: "host" };
  const fromPlugin = (list: string | null, source: "DT_RPATH" | "DT_RUNPATH") =>
    list === null ? [] : splitPath(list, origin, input.cwd, asFound, source).map((e) => ({ dir: e.dir, source, risky: !e.viaOrigin && !isSystem(e.dir, loader) }));
  const dirs: SearchDir[] = [
    ...(info.runpath === null ? fromPlugin(info.rpath, "DT_RPATH") : []),
    ...splitEnvPath(input.env.LD_LIBRARY_PATH, input.cwd).map((dir) => ({ dir, source: "LD_LIBRARY_PATH" as const, risky: false })),
    ...fromPlugin(info.runpath, "DT_RUNPATH"),
  ];
  const searched: string[] = [];
  const risky: SearchDir[] = [];
  for (const entry of dirs) {
    searched.push(entry.dir);
    const found = file(join(entry.dir, name), risky);
    if (found) return found;
    if (entry.risky) risky.push(entry);
  }
  if (!info.noDefaultLib) {
    const cached = loader.cached(name, info.machine);
    searched.push("the loader's cache");
    const fromCache = cached === null ? null : file(cached, risky, true);
    if (fromCache) return fromCache;
    for (const dir of loader.defaultDirs) {
      searched.push(dir);
      const found = file(join(dir, name), risky, true);
      if (found) return found;
    }
  }
  return { kind: "missing", searched, risky };
}

/** Splits an RPATH or RUNPATH, expanding $ORIGIN; $LIB and $PLATFORM are refused, not guessed. */
function splitPath(list: string, origin: string, cwd: string, asFound: string, source: string): { dir: string; viaOrigin: boolean }[] {
  return list.split(":").map((entry) => {
    const token = /\$(\{?)(LIB|PLATFORM)\b/.exec(entry);
    if (token) {
      throw new CxError("E_LOAD", `${asFound} has '${entry}' in its ${source}, and cxagent does not resolve $${token[2]}`, {
        hint: `use '$ORIGIN' paths only; ${SHIPPING}`,
      });
    }
    const origins = /^\$(ORIGIN|\{ORIGIN\})(?=\/|$)/.exec(entry);
    if (!origins) return { dir: entry === "" ? cwd : resolve(cwd, entry.replace(/\$(ORIGIN\b|\{ORIGIN\})/g, origin)), viaOrigin: false };
    const rest = entry.slice(origins[0].length);
    // For an approved copy $ORIGIN is /proc/self/fd, where a number names an open file of the host.
    if (/^\/+\d+(\/|$)/.test(rest) || rest.split("/").includes("..")) {
      throw new CxError("E_LOAD", `${asFound} has '${entry}' in its ${source}; cxagent accepts '$ORIGIN' and folders below it, without '..' or a numeric first folder`, {
        hint: `ship what it needs inside the plugin's folder; ${SHIPPING}`,
      });
    }
    return { dir: join(origin, rest), viaOrigin: true };
  });
}

function splitEnvPath(value: string | undefined, cwd: string): string[] {
  if (!value) return [];
  return value.split(/[:;]/).map((entry) => (entry === "" ? cwd : resolve(cwd, entry)));
}

/** The real path of a regular file, or null when there is none (also when it vanished meanwhile). */
function realFile(path: string): string | null {
  try {
    if (!statSync(path).isFile()) return null;
    return realpathSync(path);
  } catch {
    return null;
  }
}

function isSystem(dir: string, loader: ReturnType<typeof systemLoader>): boolean {
  try {
    return loader.isSystemDir(realpathSync(dir));
  } catch {
    return false;
  }
}

function shortName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
