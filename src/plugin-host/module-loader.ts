/**
 * Importing a module plugin from its approved bytes only (SPEC §6.3 for modules).
 *
 * The parent hashed the plugin's folder and handed the plugin host every file of it, as it was
 * hashed, in one sealed in-memory file (protocol/module-archive.ts). Here:
 *
 * - the files are written into a private snapshot: `<dir>/plugin/`, inside the empty 0700 folder
 *   the parent made (and removes when this process ends). Bun resolves imports there — relative
 *   paths, `node_modules` packages, package.json `exports` — so a change to the plugin's folder on
 *   disk after approval cannot change which file an import names;
 * - every module Bun loads passes through one loader hook, which serves the approved bytes from
 *   memory, never what is on disk, not even the snapshot's copy; a module from anywhere else is
 *   refused, naming it. What may be imported: the files of the plugin's own folder (its
 *   `node_modules` included), Bun's built-in modules (`bun`, `bun:*`, `node:*`, `fs`, …), and
 *   "cxagent", which is this host's own plugin API (`definePlugin`, `LOG_LEVELS`), not a file;
 * - beside the snapshot, a `package.json` and a `tsconfig.json` with nothing in them stop Bun's
 *   search for those files there, so nothing above the snapshot (a shared /tmp) changes how the
 *   plugin's code is read.
 *
 * Bun's runtime treats source handed over by a loader hook as an ES module, so CommonJS files
 * (`.cjs`, and `.js` that use `module.exports` or `require` without import/export) are run here,
 * with a `require` that loads through the same approved bytes.
 *
 * Loaded from the snapshot's files, not through the hook (approved bytes, but read from the
 * private folder when they are used; said so in the README): what the plugin reads itself at run
 * time (fs, or Bun.file on `import.meta.dir`, which points into the snapshot), libraries it opens
 * with bun:ffi and native addons (`.node`, which Bun loads with dlopen). The Workers it starts get
 * this same hook (module-workers.ts).
 */
import { createRequire, isBuiltin } from "node:module";
import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, extname, join, sep } from "node:path";
import { LOG_LEVELS, definePlugin } from "../protocol/module-plugin.ts";
import type { ModuleArchive } from "../protocol/module-archive.ts";

/** What an import was refused for; its message names the module. */
export class ImportRefused extends Error {}

export interface Snapshot {
  /** The folder holding the plugin's files: `<dir>/plugin`. */
  root: string;
  /** The entry module's path in the snapshot. */
  entry: string;
  /** Writes paths in the snapshot as the plugin's own folder, for messages. */
  shown(text: string): string;
}

const API = { definePlugin, LOG_LEVELS };
const ALLOWED = `a module plugin may import only the files of its own folder (the ones that were approved), Bun's built-in modules and "cxagent"`;

/**
 * Writes the approved files into `dir` (which the parent made: empty, ours, 0700), and the fences
 * beside them. Throws when `dir` is not such a folder or a path in the archive would leave it.
 */
export function writeSnapshot(dir: string, archive: ModuleArchive): Snapshot {
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== process.getuid?.() || (stat.mode & 0o077) !== 0 || readdirSync(dir).length > 0) {
    throw new Error(`the snapshot folder ${dir} is not an empty folder of this user's that only it can open`);
  }
  const root = join(dir, "plugin");
  const write = (path: string, bytes: Uint8Array | string) => {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, bytes, { flag: "wx", mode: 0o600 });
  };
  write(join(dir, "package.json"), "{}\n");
  write(join(dir, "tsconfig.json"), "{}\n");
  write(join(dir, "node_modules", "cxagent", "package.json"), '{"name":"cxagent","type":"module","main":"index.js"}\n');
  write(join(dir, "node_modules", "cxagent", "index.js"), "// served by the plugin host: its own plugin API\n");
  mkdirSync(root, { mode: 0o700 });
  for (const [rel, bytes] of archive.files) write(insideSnapshot(root, rel), bytes);
  for (const [rel, target] of archive.links) {
    const path = insideSnapshot(root, rel);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    symlinkSync(target, path);
  }
  return snapshotOf(dir, archive);
}

function insideSnapshot(root: string, rel: string): string {
  const parts = rel.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) throw new Error(`the module archive names a path outside the plugin's folder: ${rel}`);
  return join(root, ...parts);
}

/** The snapshot writeSnapshot wrote into `dir` (a Worker's loader finds it so: module-workers.ts). */
export function snapshotOf(dir: string, archive: ModuleArchive): Snapshot {
  const root = join(dir, "plugin");
  const prefix = root + sep;
  return {
    root,
    entry: insideSnapshot(root, archive.entry),
    shown: (text) => text.replaceAll(prefix, archive.folder + sep).replaceAll(root, archive.folder),
  };
}

type Loaded = { contents: Uint8Array; loader: "ts" | "tsx" | "js" | "jsx" } | { exports: Record<string, unknown>; loader: "object" };

/**
 * Installs the loader hook: from now on every module Bun loads is served from `archive`'s bytes,
 * or refused. The host's own modules are all loaded before this runs.
 */
export function installLoader(archive: ModuleArchive, snapshot: Snapshot, dir: string, outside: readonly string[] = []): void {
  const apiPath = join(dir, "node_modules", "cxagent", "index.js");
  const prefix = snapshot.root + sep;
  const packageTypes = new Map<string, string | null>();
  const commonJs = new Map<string, { exports: unknown }>();
  const transpiler = new Bun.Transpiler({ loader: "js" });

  /** The relative path of an approved file a snapshot path names, or a refusal naming it. */
  const approved = (path: string): string => {
    let real = path;
    try {
      real = realpathSync(path); // a link in the plugin's folder: its target's bytes
    } catch {
      // not on disk: judged by its name
    }
    if (!real.startsWith(prefix)) {
      throw new ImportRefused(`the plugin imports ${snapshot.shown(path)}, which is outside its folder ${archive.folder}: ${ALLOWED}`);
    }
    const rel = real.slice(prefix.length).split(sep).join("/");
    if (!archive.files.has(rel)) throw new ImportRefused(`the plugin imports ${snapshot.shown(path)}, which is not among the files that were approved: ${ALLOWED}`);
    return rel;
  };

  /** The "type" of the package.json nearest to `rel` in the plugin's folder. */
  const packageType = (rel: string): string | null => {
    const folder = rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "";
    const known = packageTypes.get(folder);
    if (known !== undefined) return known;
    const bytes = archive.files.get(folder ? `${folder}/package.json` : "package.json");
    let type: string | null = null;
    if (bytes) {
      try {
        const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { type?: unknown };
        type = typeof parsed.type === "string" ? parsed.type : null;
      } catch {
        type = null;
      }
    } else if (folder) {
      type = packageType(folder);
    }
    packageTypes.set(folder, type);
    return type;
  };

  const isCommonJs = (rel: string, bytes: Uint8Array): boolean => {
    const ext = extname(rel);
    if (ext === ".cjs") return true;
    if (ext !== ".js") return false;
    const type = packageType(rel);
    if (type === "module") return false;
    if (type === "commonjs") return true;
    const code = new TextDecoder().decode(bytes);
    const scanned = transpiler.scan(code);
    if (scanned.exports.length > 0 || scanned.imports.some((i) => i.kind === "import-statement")) return false;
    return /\b(module\.exports|exports\.[A-Za-z_$]|exports\[|require\s*\()/.test(code);
  };

  /** Runs a CommonJS file once, as Node would, with a require that loads approved bytes only. */
  const runCommonJs = (path: string, rel: string): unknown => {
    const known = commonJs.get(rel);
    if (known) return known.exports;
    const native = createRequire(path);
    const require = ((specifier: string) => {
      if (isBuiltin(specifier)) return native(specifier);
      const target = native.resolve(specifier);
      const targetRel = approved(target);
      return isCommonJs(targetRel, archive.files.get(targetRel)!) ? runCommonJs(target, targetRel) : native(target);
    }) as NodeJS.Require;
    Object.assign(require, { resolve: native.resolve, cache: native.cache, main: undefined });
    const module = { exports: {} as unknown, id: path, filename: path, loaded: false, require };
    commonJs.set(rel, module);
    const code = new TextDecoder().decode(archive.files.get(rel)!);
    const run = new Function("exports", "require", "module", "__filename", "__dirname", `${code}\n//# sourceURL=${path}`);
    run.call(module.exports, module.exports, require, module, path, dirname(path));
    module.loaded = true;
    return module.exports;
  };

  const asModule = (value: unknown): Record<string, unknown> => {
    const named = value !== null && typeof value === "object" && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
    const esModule = (named as { __esModule?: unknown }).__esModule === true;
    return { ...named, default: esModule ? named.default : value, "module.exports": value };
  };

  /**
   * In a Worker only: a file under a folder the user listed in the plugin's "workerFolders"
   * (module-workers.ts), loaded from disk as it is now, not from approved bytes; else null.
   */
  const fromOutside = (path: string): Loaded | null => {
    if (outside.length === 0) return null;
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      return null;
    }
    if (!outside.some((folder) => real === folder || real.startsWith(folder + sep))) return null;
    const ext = extname(real).toLowerCase();
    const bytes = readFileSync(real);
    if (ext === ".json") return { exports: asModule(JSON.parse(new TextDecoder().decode(bytes))), loader: "object" };
    if (ext === ".ts" || ext === ".mts" || ext === ".cts" || ext === ".tsx" || ext === ".jsx") return { contents: bytes, loader: ext === ".tsx" ? "tsx" : ext === ".jsx" ? "jsx" : "ts" };
    if (ext === ".js" || ext === ".mjs" || ext === ".cjs") return { contents: bytes, loader: "js" };
    return { exports: { default: real }, loader: "object" };
  };

  const load = (path: string): Loaded => {
    if (path === apiPath) return { exports: { ...API, default: API }, loader: "object" };
    const allowed = fromOutside(path);
    if (allowed) return allowed;
    const rel = approved(path);
    const bytes = archive.files.get(rel)!;
    const ext = extname(rel).toLowerCase();
    switch (ext) {
      case ".ts":
      case ".mts":
      case ".cts":
        return { contents: bytes, loader: "ts" };
      case ".tsx":
        return { contents: bytes, loader: "tsx" };
      case ".jsx":
        return { contents: bytes, loader: "jsx" };
      case ".js":
      case ".mjs":
      case ".cjs":
        return isCommonJs(rel, bytes) ? { exports: asModule(runCommonJs(path, rel)), loader: "object" } : { contents: bytes, loader: "js" };
      case ".json":
        return { exports: asModule(JSON.parse(new TextDecoder().decode(bytes))), loader: "object" };
      case ".toml":
        return { exports: asModule(Bun.TOML.parse(new TextDecoder().decode(bytes))), loader: "object" };
      case ".txt":
      case ".md":
        return { exports: { default: new TextDecoder().decode(bytes) }, loader: "object" };
      default:
        // What Bun's "file" loader gives: the file's path (its approved copy in the snapshot).
        return { exports: { default: path }, loader: "object" };
    }
  };

  Bun.plugin({
    name: "cxagent: a module plugin's approved bytes",
    setup(build) {
      build.onLoad({ filter: /.*/ }, (args) => load(args.path));
    },
  });
}
