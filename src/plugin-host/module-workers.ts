/**
 * A module plugin's Workers are inside its load set too. Bun applies a loader hook (`Bun.plugin`)
 * only in the thread that installed it: a Worker starts with none, so an import there would
 * resolve and run whatever Bun finds on disk (a package the plugin does not ship, found by the
 * walk up to each folder's node_modules). Measured under Bun 1.4.5: a Worker's `preload` modules
 * run in the Worker before its entry, and a `Bun.plugin` they install serves the entry itself and
 * every import after it — for `new Worker` and for `node:worker_threads` alike.
 *
 * So the plugin host wraps both Worker constructors before the plugin's code runs:
 *  - a Worker whose entry is a path outside the plugin's snapshot is refused when it is made,
 *    naming the path, unless it is under a folder the user listed in the plugin's `workerFolders`
 *    (config.json; never a project's);
 *  - every Worker gets a preload (`worker-preload.mjs`, written beside the snapshot) that reads the
 *    approved files from the same sealed copy the host read (its descriptor is kept open for
 *    this), installs the same loader hook (module-loader.ts) and wraps the Worker constructors in
 *    its turn, so a Worker's own Workers are covered.
 *
 * A module can undo this on purpose (`Bun.plugin.clearAll()`, the constructors it saved, a
 * `data:` URL import): that is code the user approved, reaching out deliberately; the README says so.
 */
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeArchive, type ModuleArchive } from "../protocol/module-archive.ts";
import { installLoader, snapshotOf, type Snapshot } from "./module-loader.ts";

/** What a Worker's preload hands this module: where the approved files are, and what else may load. */
interface WorkerSetup {
  /** The sealed copy of the approved files, open in this process (a Worker is a thread of it). */
  archiveFd: number;
  /** The snapshot folder (writeSnapshot's `dir`). */
  dir: string;
  /** Real paths of the folders the user allowed Workers to start from (and import from). */
  outside: string[];
  /** The preload file itself. */
  preload: string;
}

const KEY = "cxagent: a module plugin's Worker setup";

/**
 * This module's own file: what the preload imports. Inside the compiled binary it is the chunk
 * that holds this module (importing it runs nothing but this module's setup below).
 */
const SELF = import.meta.path;

/**
 * In the plugin host's main thread, before the plugin's code runs: writes the preload and wraps
 * the Worker constructors. `outside`: the plugin's `workerFolders`, as given (missing ones are skipped).
 */
export function guardWorkers(archiveFd: number, dir: string, outside: readonly string[], archive: ModuleArchive, snapshot: Snapshot): void {
  const real: string[] = [];
  for (const folder of outside) {
    try {
      real.push(realpathSync(folder));
    } catch {
      // a folder that does not exist holds no Worker
    }
  }
  const setup: WorkerSetup = { archiveFd, dir, outside: real, preload: join(dir, "worker-preload.mjs") };
  writeFileSync(
    setup.preload,
    `// cxagent: installs the plugin's loader in each Worker it starts, before the Worker's own code.\n` +
      `globalThis[Symbol.for(${JSON.stringify(KEY)})] = ${JSON.stringify(setup)};\n` +
      `await import(${JSON.stringify(SELF)});\n`,
    { flag: "wx", mode: 0o600 },
  );
  wrapConstructors(setup, archive, snapshot);
}

/** The file a Worker's entry names, when it names one by an absolute path or a file: URL; else null. */
function entryPath(specifier: unknown): string | null {
  try {
    if (specifier instanceof URL) return specifier.protocol === "file:" ? fileURLToPath(specifier) : null;
    if (typeof specifier !== "string") return null;
    if (specifier.startsWith("file:")) return fileURLToPath(specifier);
    return specifier.startsWith("/") ? specifier : null;
  } catch {
    return null;
  }
}

function wrapConstructors(setup: WorkerSetup, archive: ModuleArchive, snapshot: Snapshot) {
  const inside = (path: string, folder: string) => path === folder || path.startsWith(folder + sep);
  /** Refuses an entry outside the snapshot and the allowed folders. Relative and bare ones are judged by the Worker's loader. */
  const check = (specifier: unknown) => {
    const path = entryPath(specifier);
    if (path === null) return;
    let real = path;
    try {
      real = realpathSync(path);
    } catch {
      // judged by its name
    }
    if (inside(real, snapshot.root) || setup.outside.some((folder) => inside(real, folder))) return;
    throw new Error(
      `the plugin starts a Worker from ${snapshot.shown(path)}, which is outside its folder ${archive.folder}: a module plugin's Workers may run only its approved files, ` +
        `or files under a folder listed in the plugin's "workerFolders" in your config.json`,
    );
  };
  const withPreload = (options: unknown) => {
    const given = options !== null && typeof options === "object" ? (options as { preload?: unknown }) : {};
    const theirs = given.preload === undefined ? [] : Array.isArray(given.preload) ? given.preload : [given.preload];
    return { ...given, preload: [setup.preload, ...theirs] };
  };

  const Web = globalThis.Worker;
  class GuardedWorker extends Web {
    constructor(url: string | URL, options?: WorkerOptions) {
      check(url);
      super(url, withPreload(options) as WorkerOptions);
    }
  }
  globalThis.Worker = GuardedWorker;

  const threads = createRequire(join(setup.dir, "plugin", "index.js"))("node:worker_threads") as { Worker: new (filename: string | URL, options?: Record<string, unknown>) => object };
  const Threads = threads.Worker;
  class GuardedThread extends Threads {
    constructor(filename: string | URL, options?: Record<string, unknown>) {
      if (options?.eval !== true) check(filename); // with eval, `filename` is code
      super(filename, withPreload(options));
    }
  }
  threads.Worker = GuardedThread;
}

// In a Worker, imported by its preload: the same loader as the main thread's, before the Worker's entry.
const given = (globalThis as Record<symbol, unknown>)[Symbol.for(KEY)] as WorkerSetup | undefined;
if (given !== undefined && !Bun.isMainThread) {
  delete (globalThis as Record<symbol, unknown>)[Symbol.for(KEY)];
  let archive: ModuleArchive;
  try {
    archive = decodeArchive(readFileSync(`/proc/self/fd/${given.archiveFd}`));
  } catch (error) {
    throw new Error(`this Worker cannot start: cxagent could not read its plugin's approved files (${(error as Error).message}), and a Worker runs only those`);
  }
  const snapshot = snapshotOf(given.dir, archive);
  installLoader(archive, snapshot, given.dir, given.outside);
  wrapConstructors(given, archive, snapshot);
}
