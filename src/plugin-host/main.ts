/**
 * The plugin host: `cxagent __host <library>`, one process per plugin (SPEC §2).
 *
 * This file runs what every plugin host does first, whatever kind of plugin it serves: read the
 * parent's settings, protect the protocol (stdout kept private, fd 1 pointed at stderr, stdin
 * taken off fd 0), give up what would let plugin code reach other cxagent processes, load the
 * native shim (the one locked writer, the parent-death watcher, the request pool) — and only then
 * hand over to the kind's own startup: native.ts for a library of the cxagent ABI, cortex.ts for a
 * Cortex native plugin (--kind cortex), module.ts for a TypeScript or JavaScript module
 * (--kind module).
 */
import { CONTRACT_CURRENT, LINE_CAP } from "../protocol/contract.ts";
import { type HostArguments, HOST_DEFAULTS, type PluginKind, readHostArgv, SHIM_OPTION } from "../protocol/host-args.ts";
import { harden } from "./harden.ts";
import { type Libc, openLibc } from "./libc.ts";
import { startNative } from "./native.ts";
import { loadShim, type Shim } from "./shim.ts";
import type { HostStart, Refusal } from "./start.ts";

export type { HostStart, Refusal } from "./start.ts";

/**
 * Each kind's own startup, by its name on the command line (--kind). The other kinds' code (and
 * the validator they use) loads only for them. A new kind of plugin adds its starter here, and
 * its profile in the parent (src/kinds/).
 */
const STARTERS: Record<PluginKind, (start: HostStart) => Promise<void> | void> = {
  native: startNative,
  cortex: async (start) => (await import("./cortex.ts")).startCortex(start),
  module: async (start) => (await import("./module.ts")).startModule(start),
  "cortex-process": async (start) => (await import("./process.ts")).startProcess(start),
};

/** After the parent died: how long what the plugin started has between SIGTERM and SIGKILL. */
const ORPHAN_GRACE_MS = 1000;

/** Returns only for a module plugin, once its requests have ended (see module-serve.ts). */
export async function runPluginHost(args: string[]): Promise<void> {
  // From a checkout, the parent may name the built shim it found fresh (protocol/host-args.ts).
  const builtShim = args[0]?.startsWith(SHIM_OPTION) ? args[0].slice(SHIM_OPTION.length) : null;
  if (builtShim !== null) args = args.slice(1);
  // The parent's settings (protocol/host-args.ts). With --library-fd it passed the approved bytes
  // as an open, sealed file; each --dependency is a sealed copy of a library from the plugin's
  // folder that it needs, in the order to load them (each after what it needs).
  // A prepared host (`--await --parent-pid N`, host/prepared.ts) was started before its parent
  // knew the plugin: it runs the start-up below, the same for every plugin, then waits for its
  // settings as its first request line; its fd 3 is the copy of the approved bytes, sealed by then.
  const prepared = args[0] === "--await";
  let argv: HostArguments | { error: string } | null = prepared ? null : readHostArgv(args);
  const given = argv && !("error" in argv) ? argv : null;
  const libraryFd = prepared ? PREPARED_LIBRARY_FD : (given?.libraryFd ?? null);
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
  const parent = (prepared ? Number(args[2]) : given?.parentPid) || libc.getppid();
  if (libc.getppid() !== parent) process.exit(0); // the parent is already gone

  let shim: Shim;
  try {
    shim = await loadShim(libc, builtShim);
  } catch (error) {
    // No shim, no locked writer: this one line goes out directly, nothing else is writing yet.
    const line = JSON.stringify({ ready: false, error: `the plugin host could not load its native shim: ${String(error)}` });
    await Bun.write(Bun.file(protocolFd), line + "\n");
    process.exit(1);
  }
  if (prepared) {
    const line = firstLine(libc, requestFd);
    if (line === null) process.exit(0); // the parent went on without it (or is gone)
    argv = settingsOf(line);
  }
  const settings = argv && !("error" in argv) ? argv : null;
  const POOL_CAP = settings?.poolCap ?? HOST_DEFAULTS.poolCap;
  const POLL_MS = settings?.pollMs ?? HOST_DEFAULTS.pollMs;
  // The shim serves one request pool thread more than the parent's cap on calls in native code,
  // so a stop request finds a reader while those calls are stuck. (The parent also sends requests
  // ahead of that cap while calls are fast; if more than the cap of those get stuck at once, stop
  // waits for its deadline and the host is ended: see src/host/calls.ts.)
  if (shim.init(protocolFd, requestFd, CONTRACT_CURRENT, POOL_CAP + 1, POLL_MS, LINE_CAP, settings?.spinUs ?? HOST_DEFAULTS.spinUs) !== 0) {
    process.stderr.write("cxagent plugin host: the shim could not initialise its locks\n");
    process.exit(1);
  }
  const refuse = (reason: Refusal, error: string): never => {
    shim.writeLine({ ready: false, error, reason });
    process.exit(1);
  };
  if (unhardened) refuse("load", `the plugin host refused to load the plugin: ${unhardened}`);
  // From here the shim's watcher ends this host's whole group if the parent dies; the kernel's
  // parent-death signal would kill this process first and leave the group behind, so it goes.
  if (process.platform === "linux" && shim.guard(parent, ORPHAN_GRACE_MS) === 0) libc.dieWithParent(false);
  const phase = (name: string) => shim.writeLine({ event: "phase", name });

  if (!settings) return refuse("load", `the plugin host was started wrongly: ${argv && "error" in argv ? argv.error : ""}`);
  // The approved bytes arrive as sealed copies only: nothing can have changed them since they were hashed.
  for (const fd of [settings.libraryFd, ...settings.dependencies.map((d) => d.fd)]) {
    if (fd !== null && !libc.sealed(fd)) refuse("load", `the plugin host refused to load the plugin: descriptor ${fd}, which should hold a sealed copy of its approved bytes, is not sealed`);
  }
  return STARTERS[settings.kind]({ libc, shim, settings, refuse, phase, protocolFd, requestFd });
}

/** Linux's, like the C library the host opens (libc.ts). */
const EAGAIN = 11;
const ENOTSOCK = 88;

/** Where a prepared host finds the copy of the approved bytes (the parent passed it at spawn). */
const PREPARED_LIBRARY_FD = 3;
/** A prepared host's settings line is a command line and a folder: far below this. */
const SETTINGS_LINE_CAP = 64 * 1024;

/**
 * Reads one line from `fd` and nothing after it: the requests that follow are the shim's to read.
 * A socket (as the parent's pipes are on Linux) is looked into first, so the line is taken in one
 * read; anything else is read a byte at a time. While nothing has come, it waits in poll(2).
 * Null at the end of input.
 */
function firstLine(libc: Libc, fd: number): string | null {
  const parts: Uint8Array[] = [];
  let size = 0;
  const window = new Uint8Array(4096);
  let peeking = true;
  for (;;) {
    let want = 1;
    if (peeking) {
      const ahead = libc.peek(fd, window);
      if (ahead === -ENOTSOCK) peeking = false;
      else if (ahead === -EAGAIN) {
        libc.waitReadable(fd);
        continue;
      } else if (ahead <= 0) return null;
      else want = window.subarray(0, ahead).indexOf(10) + 1 || ahead;
    }
    const n = libc.read(fd, window.subarray(0, want));
    if (n === -EAGAIN) {
      libc.waitReadable(fd);
      continue;
    }
    if (n <= 0) return null;
    const got = window.slice(0, n);
    const end = got.indexOf(10);
    parts.push(end < 0 ? got : got.subarray(0, end));
    size += n;
    if (end >= 0) return Buffer.concat(parts).toString("utf8");
    if (size >= SETTINGS_LINE_CAP) return "";
  }
}

/** A prepared host's settings line, `{"argv": [...], "cwd": DIR}`: its command line, and where to run. */
function settingsOf(line: string): HostArguments | { error: string } {
  let value: { argv?: unknown; cwd?: unknown };
  try {
    value = JSON.parse(line) as typeof value;
  } catch {
    return { error: "its settings line is not JSON" };
  }
  if (!Array.isArray(value?.argv) || !value.argv.every((a) => typeof a === "string") || typeof value.cwd !== "string") {
    return { error: 'its settings line must be {"argv": [strings], "cwd": string}' };
  }
  try {
    process.chdir(value.cwd);
  } catch (error) {
    return { error: `it could not enter its working folder ${value.cwd}: ${(error as Error).message}` };
  }
  const argv = readHostArgv(value.argv as string[]);
  if (!("error" in argv) && argv.libraryFd !== PREPARED_LIBRARY_FD) return { error: `a prepared host's library is at descriptor ${PREPARED_LIBRARY_FD}` };
  return argv;
}
