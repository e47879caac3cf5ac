/**
 * The plugin host: `cxagent __host <library>`, one process per plugin (SPEC §2).
 *
 * This file runs the startup steps in JavaScript — protect the protocol, load the library, check
 * the handshake and the manifest, attach the host table — then hands the plugin's exports to the
 * native shim, which serves requests on its own thread pool until the parent closes stdin.
 */
import { CFunction, CString, FFIType, type Pointer } from "bun:ffi";
import { describeProblems, checkManifest, CONTRACT_CURRENT, CONTRACT_OLDEST, contractInRange } from "../protocol/manifest.ts";
import { preview } from "../protocol/issues.ts";
import { readHostArgv } from "../protocol/host-args.ts";
import { LINE_CAP, MANDATORY_EXPORTS, type OptionalExport } from "../protocol/wire.ts";
import { harden } from "./harden.ts";
import { openLibc } from "./libc.ts";
import { loadShim, type Shim } from "./shim.ts";

const POOL_START = 2;
/** The longest a request thread spins for the next request before it sleeps, when the shim finds
 * that spinning pays on this machine (0 = never; see the spin before next_line in the shim). */
const SPIN_US = 100;
/** After the parent died: how long what the plugin started has between SIGTERM and SIGKILL. */
const ORPHAN_GRACE_MS = 1000;

export async function runPluginHost(args: string[]): Promise<never> {
  // The parent's settings (protocol/host-args.ts). With --library-fd it passed the approved bytes
  // as an open, sealed file; each --dependency is a sealed copy of a library from the plugin's
  // folder that it needs, in the order to load them (each after what it needs).
  const argv = readHostArgv(args);
  const settings = "error" in argv ? null : argv;
  const libraryPath = settings?.library;
  const libraryFd = settings?.libraryFd ?? null;
  const dependencies = settings?.dependencies ?? [];
  const POOL_CAP = settings?.poolCap ?? 16;
  const POLL_MS = settings?.pollMs ?? 200;
  // 1. Before anything can print: keep the real stdout for the protocol and send fd 1 to stderr;
  //    take the requests off fd 0 too, so a process the plugin starts cannot read them.
  const libc = openLibc();
  const protocolFd = libc.keepPrivate(1);
  const requestFd = libc.keepPrivate(0);
  libc.dup2(2, 1);
  libc.nullify(0);
  // The approved bytes stay open until dlopen; a process a library constructor starts does not get them.
  if (libraryFd !== null) libc.closeOnExec(libraryFd);
  //    Give up what would let plugin code reach other cxagent processes' descriptors.
  const unhardened = harden(libc);
  libc.dieWithParent();
  const parent = settings?.parentPid || libc.getppid();
  if (libc.getppid() !== parent) process.exit(0); // the parent is already gone

  let shim: Shim;
  try {
    shim = await loadShim(libc);
  } catch (error) {
    // No shim, no locked writer: this one line goes out directly, nothing else is writing yet.
    const line = JSON.stringify({ ready: false, error: `the plugin host could not load its native shim: ${String(error)}` });
    await Bun.write(Bun.file(protocolFd), line + "\n");
    process.exit(1);
  }
  // The shim serves one request pool thread more than the parent's cap on calls in native code,
  // so a stop request finds a reader while those calls are stuck. (The parent also sends requests
  // ahead of that cap while calls are fast; if more than the cap of those get stuck at once, stop
  // waits for its deadline and the host is ended: see src/host/calls.ts.)
  if (shim.init(protocolFd, requestFd, CONTRACT_CURRENT, POOL_CAP + 1, POLL_MS, LINE_CAP, settings?.spinUs ?? SPIN_US) !== 0) {
    process.stderr.write("cxagent plugin host: the shim could not initialise its locks\n");
    process.exit(1);
  }
  const refuse = (reason: "load" | "exports" | "handshake" | "manifest", error: string): never => {
    shim.writeLine({ ready: false, error, reason });
    process.exit(1);
  };
  if (unhardened) refuse("load", `the plugin host refused to load the plugin: ${unhardened}`);
  // From here the shim's watcher ends this host's whole group if the parent dies; the kernel's
  // parent-death signal would kill this process first and leave the group behind, so it goes.
  if (process.platform === "linux" && shim.guard(parent, ORPHAN_GRACE_MS) === 0) libc.dieWithParent(false);
  const phase = (name: string) => shim.writeLine({ event: "phase", name });

  if (!settings) refuse("load", `the plugin host was started wrongly: ${"error" in argv ? argv.error : ""}`);
  const path = libraryPath!;

  // 2. Load the library. Its static constructors run here; trust was settled by the parent.
  //    The libraries it ships come first, from their approved copies: the loader then matches the
  //    library's DT_NEEDED to them by soname and never opens the files on disk.
  phase("dlopen");
  for (const dependency of dependencies) {
    const loaded = libc.open(`/proc/self/fd/${dependency.fd}`);
    libc.close(dependency.fd);
    if ("error" in loaded) return refuse("load", `cannot load ${dependency.path}, a library the plugin ships, as a shared library: ${loaded.error}`);
  }
  const opened = libc.open(libraryFd === null ? path : `/proc/self/fd/${libraryFd}`);
  if (libraryFd !== null) libc.close(libraryFd);
  if ("error" in opened) return refuse("load", `cannot load ${path} as a shared library: ${opened.error}`);
  const lib = opened.handle;
  const address = (name: string) => libc.symbol(lib, name);

  const missing = MANDATORY_EXPORTS.filter((name) => !address(name));
  if (missing.length > 0) {
    const list = missing.join(", ");
    return refuse(
      "exports",
      `${path} does not export ${missing.length === 1 ? "the mandatory function" : `${missing.length} mandatory functions`}: ${list}` +
        ` (see ffi/cxagent_plugin.h; each needs CXAGENT_PLUGIN_EXPORT)`,
    );
  }
  const exported = (name: string) => address(name)!;
  const optional = (name: string) => address(name);

  // 3. The handshake.
  phase("cxagent_plugin_abi_version");
  const abiVersion = CFunction({ ptr: exported("cxagent_plugin_abi_version"), args: [], returns: FFIType.i32 })();
  if (!contractInRange(abiVersion)) {
    const why = abiVersion > CONTRACT_CURRENT ? "newer than this host understands" : "older than this host still supports";
    return refuse(
      "handshake",
      `handshake refused: the plugin was built against contract ${abiVersion}, which is ${why}; ` +
        `this host accepts contracts ${CONTRACT_OLDEST} to ${CONTRACT_CURRENT}`,
    );
  }

  // 4. Describe: copy the manifest, free it, then parse it.
  const free = CFunction({ ptr: exported("cxagent_plugin_free"), args: [FFIType.ptr], returns: FFIType.void });
  phase("cxagent_plugin_describe");
  const describe = CFunction({ ptr: exported("cxagent_plugin_describe"), args: [], returns: FFIType.ptr });
  const raw = describe() as Pointer | null;
  if (!raw) return refuse("manifest", "cxagent_plugin_describe returned NULL; it must always return the manifest");
  let text: string;
  try {
    text = String(new CString(raw));
  } finally {
    free(raw);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return refuse("manifest", `cxagent_plugin_describe returned invalid JSON (${(error as Error).message}): ${preview(text)}`);
  }
  const checked = checkManifest(parsed);
  if (!checked.ok) {
    const n = checked.problems.length;
    return refuse("manifest", `the manifest from cxagent_plugin_describe has ${n} problem${n === 1 ? "" : "s"}:\n${describeProblems(checked.problems)}`);
  }
  const manifest = checked.manifest;
  if (manifest.pluginContract !== abiVersion) {
    return refuse(
      "manifest",
      `the manifest says pluginContract ${manifest.pluginContract} but cxagent_plugin_abi_version returned ${abiVersion}; the two must be equal`,
    );
  }

  const present: Record<OptionalExport, Pointer | null> = {
    poll: optional("cxagent_plugin_poll"),
    command: optional("cxagent_plugin_command"),
    attach: optional("cxagent_plugin_attach"),
  };
  if (manifest.client && !present.poll) {
    return refuse("manifest", "the manifest declares client: true but the library does not export cxagent_plugin_poll, which a client needs");
  }

  // 5. Attach, once, before start.
  if (present.attach) {
    phase("cxagent_plugin_attach");
    CFunction({ ptr: present.attach, args: [FFIType.ptr], returns: FFIType.void })(shim.table());
  }

  // 6. Ready: from here on the shim's threads serve every request.
  shim.setExports([
    exported("cxagent_plugin_start"),
    exported("cxagent_plugin_invoke"),
    exported("cxagent_plugin_gate"),
    exported("cxagent_plugin_stop"),
    exported("cxagent_plugin_free"),
    present.poll,
    present.command,
  ]);
  const exports = (Object.keys(present) as OptionalExport[]).filter((k) => present[k]);
  shim.writeLine({ ready: true, contract: abiVersion, manifest: parsed, exports });
  if (shim.serve(POOL_START) !== 0) {
    process.stderr.write("cxagent plugin host: could not start the request threads\n");
    process.exit(1);
  }
  process.exit(shim.wait());
}
