/**
 * Starting a module plugin (a TypeScript or JavaScript module made with `definePlugin`): take its
 * approved files from the parent's sealed copy, write the private snapshot and install the loader
 * that serves only those bytes (module-loader.ts), import the module, check what it exports and
 * its manifest, and serve its requests on the event loop (module-serve.ts, module-io.ts).
 *
 * Everything main.ts did first holds here too: the protocol has its own descriptors and fd 1
 * points at stderr, so console.log and process.stdout.write reach the parent as the plugin's
 * output; the host gave up CAP_SYS_PTRACE and is not dumpable; the shim's watcher ends the host's
 * group when the parent dies. What ends this process — process.exit, a crash, an exception
 * nobody awaited — costs the calls in flight, as for a native plugin; the parent restarts it.
 */
import { closeSync, readdirSync, readFileSync, readlinkSync, rmSync, writeSync } from "node:fs";
import { checkManifest, describeProblems, type Manifest } from "../protocol/manifest.ts";
import { decodeArchive, type ModuleArchive } from "../protocol/module-archive.ts";
import type { ModulePlugin } from "../protocol/module-plugin.ts";
import { preview } from "../protocol/issues.ts";
import type { Libc } from "./libc.ts";
import type { HostStart } from "./start.ts";
import { installLoader, writeSnapshot } from "./module-loader.ts";
import { guardWorkers } from "./module-workers.ts";
import { readyLine, tooLongText } from "./ready-line.ts";
import { messageOf } from "./module-io.ts";
import { serve } from "./module-serve.ts";

const REQUIRED = ["start", "invoke", "stop"] as const;
const OPTIONAL = ["describe", "gate", "poll", "command"] as const;

export async function startModule({ libc, shim, settings, refuse, phase, protocolFd, requestFd }: HostStart): Promise<void> {
  // 2. The approved files, as the parent hashed them.
  const { libraryFd, snapshot: dir } = settings;
  if (libraryFd === null || dir === null) return refuse("load", "the plugin host was started without the module's approved files (--library-fd and --snapshot)");
  let archive: ModuleArchive;
  try {
    // Through /proc: the descriptor's own offset is at the end, where the parent's writes left it.
    // It stays open: each Worker the plugin starts reads the approved files from it (module-workers.ts).
    archive = decodeArchive(readFileSync(`/proc/self/fd/${libraryFd}`));
    libc.closeOnExec(libraryFd); // not handed to what the plugin runs
  } catch (error) {
    closeSync(libraryFd);
    return refuse("load", `the plugin host could not read the module's approved files: ${(error as Error).message}`);
  }
  phase("snapshot");
  let snapshot;
  try {
    snapshot = writeSnapshot(dir, archive);
    installLoader(archive, snapshot, dir);
    guardWorkers(libraryFd, dir, settings.workerFolders ?? [], archive, snapshot);
  } catch (error) {
    return refuse("load", `the plugin host could not prepare the module's approved files: ${(error as Error).message}`);
  }
  const { shown } = snapshot;

  // 3. Import it: its top-level code runs here; trust was settled by the parent.
  sealProtocol(libc, protocolFd, requestFd);
  endOnUnhandled();
  phase("import");
  let namespace: { default?: unknown };
  try {
    namespace = await import(snapshot.entry);
  } catch (error) {
    const message = shown(messageOf(error, "the module"));
    const why = /Cannot find (module|package)/.test(message)
      ? " (the plugin host imports from a private copy of the plugin's folder as it was approved: files outside it, and packages that are not in its node_modules cannot be imported)"
      : "";
    return refuse("load", `importing ${archive.entry} failed: ${message}${why}`);
  }
  const plugin = namespace.default;
  if (plugin === null || typeof plugin !== "object") {
    return refuse("exports", `${archive.entry} must default-export its plugin, made with definePlugin({ start, invoke, stop, ... }) from "cxagent"; its default export is ${plugin === undefined ? "missing" : preview(String(plugin))}`);
  }
  const has = (name: string) => typeof (plugin as Record<string, unknown>)[name] === "function";
  const missing = REQUIRED.filter((name) => !has(name));
  const wrong = OPTIONAL.filter((name) => (plugin as Record<string, unknown>)[name] !== undefined && !has(name));
  if (missing.length || wrong.length) {
    const parts = [
      ...(missing.length ? [`it has no ${missing.join(", ")} function${missing.length === 1 ? "" : "s"}`] : []),
      ...(wrong.length ? [`${wrong.join(", ")} ${wrong.length === 1 ? "is" : "are"} not a function`] : []),
    ];
    return refuse("exports", `the plugin ${archive.entry} exports is not usable: ${parts.join("; ")} (start, invoke and stop are required)`);
  }
  const module = plugin as ModulePlugin;

  // 4. The manifest: what describe returns, or else the sidecar itself.
  let manifestValue: unknown;
  if (module.describe) {
    phase("describe");
    try {
      manifestValue = await module.describe();
    } catch (error) {
      return refuse("manifest", `describe() failed: ${shown(messageOf(error, "describe()"))}`);
    }
    if (manifestValue === undefined) return refuse("manifest", "describe() returned undefined; it must return the manifest");
    try {
      manifestValue = JSON.parse(JSON.stringify(manifestValue)); // what the wire carries
    } catch (error) {
      return refuse("manifest", `describe() returned a value that cannot be written as JSON (${(error as Error).message})`);
    }
  } else {
    const sidecar = archive.entry.replace(/\.[^./]+$/, "") + ".plugin.json";
    const bytes = archive.files.get(sidecar);
    if (!bytes) return refuse("manifest", `the module has no describe function and its sidecar ${sidecar} is not among its files`);
    try {
      manifestValue = JSON.parse(new TextDecoder().decode(bytes));
    } catch (error) {
      return refuse("manifest", `the sidecar ${sidecar} is not valid JSON: ${(error as Error).message}`);
    }
  }
  const checked = checkManifest(manifestValue);
  if (!checked.ok) {
    const n = checked.problems.length;
    return refuse("manifest", `the manifest ${module.describe ? "from describe()" : "in the sidecar"} has ${n} problem${n === 1 ? "" : "s"}:\n${describeProblems(checked.problems)}`);
  }
  const problem = capabilityProblem(checked.manifest, module);
  if (problem) return refuse("manifest", problem);

  // 5. Ready: requests are served from here on.
  const exports = (["poll", "command"] as const).filter((name) => module[name]);
  const ready = readyLine({ ready: true, contract: checked.manifest.pluginContract, manifest: manifestValue, exports });
  if ("tooLong" in ready) return refuse("manifest", tooLongText(`the manifest ${module.describe ? "from describe()" : "in the sidecar"}`, ready.tooLong));
  shim.writeText(ready.text);
  // An orphan's snapshot goes with it: the parent that would remove it is gone.
  return serve({ shim, plugin: module, requestFd, pollMs: settings.pollMs, shown, orphaned: () => rmSync(dir, { recursive: true, force: true }) });
}

/**
 * An error that escapes every call — thrown in a timer, a promise nobody awaits — ends the plugin
 * host, as Node would and as a crash of a native plugin's own thread does: the calls in flight
 * fail, the parent starts a fresh host for the next call, and the crash budget counts it. The
 * error goes to stderr, so the parent's crash message shows it. (An error of a call's own promise
 * fails that call only: module-serve.ts catches those.)
 */
function endOnUnhandled() {
  const end = (what: string) => (error: unknown) => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    try {
      writeSync(2, `cxagent plugin host: ${what} that nobody handled ends this plugin host: ${text}\n`);
    } finally {
      process.exit(1);
    }
  };
  process.on("uncaughtException", end("an exception"));
  process.on("unhandledRejection", end("a rejected promise"));
}

/**
 * Bun keeps its own copy of fd 1 for process.stdout (and of fd 0 for process.stdin) from the
 * moment the stream is first touched. Anything that touches it before main.ts moved them (the
 * compiled binary did, until it was built with --splitting; a preload can) leaves a copy on the
 * protocol: writes would then reach it, reads take the requests. Every descriptor still open on
 * the protocol's stdout is pointed at stderr, every one on its stdin at /dev/null, but the
 * protocol's own two.
 */
function sealProtocol(libc: Libc, protocolFd: number, requestFd: number) {
  const target = (fd: number | string) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return null;
    }
  };
  const out = target(protocolFd);
  const input = target(requestFd);
  for (const name of readdirSync("/proc/self/fd")) {
    const fd = Number(name);
    if (fd === protocolFd || fd === requestFd || fd <= 2) continue;
    const at = target(fd);
    if (at !== null && at === out) libc.dup2(2, fd);
    else if (at !== null && at === input) libc.nullify(fd);
  }
}

/** What the manifest promises that the module lacks a function for. */
function capabilityProblem(manifest: Manifest, module: ModulePlugin): string | null {
  if (manifest.client && !module.poll) return "the manifest declares client: true but the module has no poll function, which a client needs";
  const dynamic = manifest.tools.filter((t) => t.gated === "dynamic").map((t) => t.name);
  if (dynamic.length && !module.gate) {
    return `the manifest gates ${dynamic.map((n) => `'${n}'`).join(", ")} "dynamic", but the module has no gate function to decide ${dynamic.length === 1 ? "it" : "them"}`;
  }
  return null;
}
