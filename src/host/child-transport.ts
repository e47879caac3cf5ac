/**
 * The transport to a plugin host that is a child process (SPEC §2): `cxagent __host <library>`,
 * spawned in a session and process group of its own, with the approved bytes as sealed in-memory
 * files, an explicit environment and its settings on its command line. It reads the host's stdout
 * (the protocol) and stderr continuously, line by line, and ends the host only through the
 * reaper's one escalation routine.
 */
import type { Subprocess } from "bun";
import { closeSync, constants, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { CxError } from "../errors.ts";
import type { KindProfile } from "../kinds/index.ts";
import { hostArgv, HOST_DEFAULTS } from "../protocol/host-args.ts";
import type { HostSettings } from "../protocol/host-settings.ts";
import { type HostSandbox, SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE } from "../protocol/sandbox.ts";
import { LINE_CAP } from "../protocol/wire.ts";
import { endProcesses, finished } from "../reaper/escalate.ts";
import { type Owned, proveDescent } from "../reaper/ours.ts";
import { readStat } from "../reaper/proc.ts";
import { readLines } from "./lines.ts";
import { sealedCopy } from "./memfd.ts";
import { makeNonDumpable } from "./nondumpable.ts";
import { closePair, pollReadable, readSocketLines, socketPair } from "./protocol-socket.ts";
import { withRuntimeTuning } from "./runtime-tuning.ts";
import { takePrepared } from "./prepared.ts";
import type { ExitInfo, Transport, TransportSink } from "./transport.ts";
import { tempFolder } from "../files.ts";
import { tryLock } from "../lock.ts";
import { ensurePrivateFolder } from "./private-folder.ts";

/** A library from the plugin's folder that its library needs, with the approved bytes. */
export interface SealedDependency {
  /** Its path in the load set, for messages. */
  path: string;
  /** The name it is needed by and its DT_SONAME: the loader matches the sealed copy by it. */
  soname: string;
  bytes: Uint8Array;
}

export interface ChildSpec {
  /** The command that starts a plugin host, without its arguments (see session/host-command.ts). */
  command: string[];
  library: string;
  /**
   * The library's approved bytes: loaded from a sealed copy of these, not from the file. For a
   * module, its folder's approved files (protocol/module-archive.ts).
   */
  libraryBytes?: Uint8Array;
  /** Loaded from sealed copies too, in this order, before the library. */
  dependencies?: SealedDependency[];
  /** The plugin's name, for messages and the sealed copies' names. */
  label: string;
  /** The kind's profile: whether its host gets a snapshot folder, may be a prepared one, its runtime tuning. */
  profile: KindProfile;
  cwd: string;
  /** The host's settings, whole: its environment (nothing else of this process's is passed) and its command line. */
  host: HostSettings;
  /** Check mode (`cxagent check`). */
  check?: boolean;
  /** Set when `command` is the sandbox launcher's (src/sandbox/): told when the host ended. */
  sandbox?: HostSandbox;
}

/**
 * A module plugin's snapshot folder, named for the process that made it (pid and start time), so
 * that one left by a parent killed before its plugin hosts ended can be told apart and removed.
 *
 * Its maker also holds flock(2) on the folder for as long as the folder is in use. A pid and a
 * start time read from /proc prove a maker gone only where this process sees the maker's /proc: a
 * cxagent in another pid namespace (`unshare --pid`, a container sharing the temporary folder)
 * sees no such process, or another one with that pid, and would remove a live cxagent's snapshot.
 * The lock is the kernel's, the same in every namespace, and the kernel drops it when its holder
 * ends however it ends (kill -9 included): a sweep removes a folder only when it can take it.
 */
const SNAPSHOT = /^cxagent-module-(\d+)\.(\d+)-/;
let ownStart: string | undefined;

interface SnapshotFolder {
  path: string;
  /** The folder's descriptor holding its lock; null where there is no flock. */
  lock: number | null;
}

/**
 * Makes the folder under a name no sweep looks at, locks it, and only then gives it its name: at
 * no moment does a folder of that name exist unlocked while its maker lives.
 */
function snapshotFolder(base: string): SnapshotFolder {
  ownStart ??= readStat(process.pid)?.startTime ?? "0";
  const folder = ensurePrivateFolder(base, "module plugins' snapshots are written");
  const made = mkdtempSync(join(folder, `.cxagent-module-${process.pid}.${ownStart}-`));
  let fd: number | null = null;
  try {
    fd = openSync(made, constants.O_RDONLY | constants.O_DIRECTORY);
    const taken = tryLock(fd);
    if (taken === null) {
      closeSync(fd);
      fd = null;
    } else if (!taken) {
      throw new Error("another process holds the lock of a folder this process has just made");
    }
    const path = join(folder, basename(made).slice(1));
    // Only this process makes names with its pid and start time; rename(2) would replace an empty one.
    if (existsSync(path)) throw new Error(`${path} exists already`);
    renameSync(made, path);
    return { path, lock: fd };
  } catch (error) {
    if (fd !== null) closeSync(fd);
    rmSync(made, { recursive: true, force: true });
    throw new CxError("E_LOAD", `cxagent could not make a module plugin's snapshot folder in ${folder}: ${(error as Error).message}`, {
      cause: error,
      hint: `check that ${folder} is a writable folder`,
    });
  }
}

/**
 * Removes the snapshot folders in `folder` (the snapshots' folder, snapshotBase) whose maker is gone (a parent
 * killed with kill -9 removes nothing): this user's folders only, and only those whose lock this
 * process can take (see SNAPSHOT). Returns what it removed.
 */
export function sweepSnapshots(folder = tempFolder()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = SNAPSHOT.exec(name);
    if (!match) continue;
    if (readStat(Number(match[1]))?.startTime === match[2]) continue; // its maker still runs
    const path = join(folder, name);
    let fd: number | null = null;
    try {
      const stat = lstatSync(path);
      if (!stat.isDirectory() || stat.uid !== process.getuid?.()) continue;
      fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      if (tryLock(fd) === false) continue; // its maker still runs, where this process cannot see it
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // gone meanwhile, or not ours to remove
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }
  return removed;
}

/** How long the protocol output may still be read after the host exited (a child may hold the pipe). */
const DRAIN_MS = 250;
const STDERR_LINE_CAP = 16 * 1024;

/** Waits for `promise` at most `ms`; true if it settled in time. Leaves no timer behind. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const, () => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sealed in-memory copies of the approved bytes: the library first, then its dependencies. On
 * Linux a load whose copies cannot be made is refused rather than loaded from the files, which
 * may have changed; elsewhere (no memfd) the files are loaded.
 */
function sealedCopies(spec: ChildSpec): number[] {
  if (!spec.libraryBytes) return [];
  const fds: number[] = [];
  const parts: [Uint8Array, string][] = [[spec.libraryBytes, spec.label], ...(spec.dependencies ?? []).map((d) => [d.bytes, `${spec.label}:${d.soname}`] as [Uint8Array, string])];
  for (const [bytes, name] of parts) {
    const fd = sealedCopy(bytes, name);
    if (fd === null) {
      for (const open of fds) closeSync(open);
      if (process.platform !== "linux" && fds.length === 0) return [];
      throw new CxError("E_LOAD", `plugin '${spec.label}' was not loaded: cxagent could not make a sealed in-memory copy (memfd) of its approved bytes`, {
        hint: "the plugin host loads only sealed copies of what was approved; check that memfd_create is allowed here",
      });
    }
    fds.push(fd);
  }
  return fds;
}

export class ChildTransport implements Transport {
  readonly process: Owned;
  readonly exited: Promise<ExitInfo>;
  private readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  /** Set where the protocol channel is a socket this process can poll (see Transport). */
  awaitOutput?: (budgetNs: number) => boolean;
  /** The protocol channel's reader is done: its descriptor is closed, and its number may be reused. */
  private outputDone = false;
  /** Processes the plugin registered that proved to be the host's descendants. */
  private readonly children: Owned[] = [];

  constructor(spec: ChildSpec, sink: TransportSink) {
    makeNonDumpable(); // before any plugin host exists (see nondumpable.ts); Session.open did it already
    const { profile } = spec;
    const { snapshotDir } = spec.host;
    if (profile.snapshot && (!spec.libraryBytes || !snapshotDir)) throw new CxError("E_INTERNAL", `plugin '${spec.label}' is a ${profile.kind}, and its approved files or the folder for its snapshot were not given`);
    // A module's host writes its approved files here to import them; removed once the host is gone.
    const folder = profile.snapshot ? snapshotFolder(snapshotDir!) : null;
    const snapshot = folder?.path ?? null;
    // Removed before its lock is let go: no sweep can take the lock of a folder still there in use.
    let snapshotKept = folder !== null;
    const removeSnapshot = () => {
      if (!snapshotKept) return;
      snapshotKept = false;
      rmSync(folder!.path, { recursive: true, force: true });
      if (folder!.lock !== null) closeSync(folder!.lock);
    };
    // A host started before its plugin was known (prepared.ts) serves a plain load: its fd 3 is
    // sealed now with the approved bytes, and its settings follow as its first line.
    const prepared = profile.preparedHost && !spec.check && !spec.dependencies?.length && spec.libraryBytes ? takePrepared(spec.command, spec.host.env, spec.libraryBytes) : null;
    let copies: number[];
    try {
      copies = prepared ? [] : sealedCopies(spec);
    } catch (error) {
      removeSnapshot();
      throw error;
    }
    // fds 3, 4, ... in the child: the library's copy, then each dependency's.
    const args = hostArgv({
      library: spec.library,
      libraryFd: prepared || copies.length ? 3 : null,
      dependencies: copies.slice(1).map((_fd, i) => ({ fd: 4 + i, path: spec.dependencies![i]!.path })),
      parentPid: process.pid,
      kind: profile.kind,
      snapshot,
      poolCap: spec.host.poolCap ?? HOST_DEFAULTS.poolCap,
      pollMs: spec.host.pollMs,
      spinUs: spec.host.spinUs,
      sessionId: spec.host.sessionId,
      source: spec.host.source,
      check: spec.check,
      ...(spec.host.workerFolders.length ? { workerFolders: spec.host.workerFolders } : {}),
      ...(spec.host.callSandbox === undefined ? {} : { callSandbox: spec.host.callSandbox }),
    });
    // The host's stdout: a socket pair where there is one (protocol-socket.ts), else a pipe.
    const pair = prepared ? null : socketPair();
    try {
      this.proc = prepared?.proc ?? Bun.spawn({
        cmd: spec.sandbox?.commandFor?.(args) ?? [...spec.command, ...args],
        cwd: spec.cwd,
        env: withRuntimeTuning(spec.host.env, profile),
        stdio: ["pipe", pair?.child ?? "pipe", "pipe", ...copies],
        detached: true, // a session and process group of its own, so everything it starts can be ended with it
      }) as Subprocess<"pipe", "pipe", "pipe">;
      if (prepared) this.send(JSON.stringify({ argv: args, cwd: spec.cwd }) + "\n");
    } catch (error) {
      removeSnapshot();
      closePair(pair);
      throw error;
    } finally {
      for (const fd of copies) closeSync(fd);
    }
    closePair({ child: pair?.child }); // the host has its copy
    const outFd = prepared ? prepared.protocolFd : (pair?.parent ?? null);
    const pid = this.proc.pid;
    const stat = readStat(pid);
    this.process = stat ? { pid, startTime: stat.startTime, pgid: stat.pgid, sid: stat.sid } : { pid, startTime: "0" };
    const onBroken = (why: string) => sink.onBroken(why);
    const socket = outFd !== null ? readSocketLines(outFd, LINE_CAP, (line) => sink.onLine(line), onBroken, sink.limits) : null;
    const protocol = socket
      ? socket.finished
      : readLines(this.proc.stdout, LINE_CAP, (line) => sink.onLine(line), sink.limits).catch((error) => onBroken(`reading the plugin host's output failed: ${String(error)}`));
    if (socket && outFd !== null) {
      void protocol.finally(() => (this.outputDone = true));
      // What the spin saw arrive is read at once, not on the event loop's next turn.
      this.awaitOutput = (budgetNs) => {
        if (this.outputDone || !pollReadable(outFd, budgetNs)) return false;
        socket.readNow();
        return true;
      };
    }
    // A sandboxed host's last lines say whether a limit stopped it, or why its launcher refused.
    const last: string[] = [];
    const stderrRead = readLines(this.proc.stderr, STDERR_LINE_CAP, (line) => {
      if (spec.sandbox && last.push(line.text) > 64) last.shift(); // the runtime's crash banner is about 20 lines
      if (!spec.sandbox || !line.text.startsWith(SANDBOX_REFUSED_LINE)) sink.onStderr(line);
    }).catch(() => {});
    this.exited = this.proc.exited.then(async () => {
      const signal = this.proc.signalCode;
      // Replies written just before the end are still in the pipe: read them first, briefly,
      // since a process the plugin started may hold the pipe open.
      await within(protocol, DRAIN_MS);
      removeSnapshot();
      if (spec.sandbox) await within(stderrRead, DRAIN_MS); // its last words say which limit stopped it
      const exit: ExitInfo = { code: this.proc.exitCode, signal: signal === null || signal === undefined ? null : String(signal) };
      return spec.sandbox ? sandboxExit(spec.sandbox, pid, exit, last) : exit;
    });
  }

  send(text: string): void {
    try {
      this.proc.stdin.write(text);
      this.proc.stdin.flush();
    } catch {
      // the host is gone; its exit fails the pending calls with the cause
    }
  }

  closeInput(): void {
    try {
      this.proc.stdin.end();
    } catch {
      // already closed
    }
  }

  async end(graceMs: number): Promise<void> {
    if (!(await within(this.exited, graceMs))) await endProcesses([this.process], { graceMs });
    await this.exited;
  }

  async kill(): Promise<void> {
    await endProcesses([this.process], { graceMs: 0 });
    await this.exited;
  }

  adopt(pid: number): { ok: true; process: Required<Owned> } | { ok: false; reason: string } {
    const proof = proveDescent(pid, this.process);
    if (proof.ok) this.children.push(proof.process);
    return proof;
  }

  async release(graceMs: number): Promise<number[]> {
    // What the plugin registered, and what it left in the host's group, dies with the host.
    return finished(await endProcesses([this.process, ...this.children], { graceMs }));
  }
}

/** A sandboxed host's end: its launcher's refusal (E_SANDBOX), or the limit that stopped it (E_LIMIT). */
function sandboxExit(sandbox: HostSandbox, pid: number, exit: ExitInfo, last: readonly string[]): ExitInfo {
  const refusal = last.find((l) => l.startsWith(SANDBOX_REFUSED_LINE));
  if (exit.code === SANDBOX_REFUSED_EXIT && refusal) {
    try {
      sandbox.ended(pid, exit, last);
      return { ...exit, refused: JSON.parse(refusal.slice(SANDBOX_REFUSED_LINE.length)) as { layer: string; why: string } };
    } catch {
      // not the launcher's line: an ordinary end
    }
  }
  const limit = sandbox.ended(pid, exit, last);
  return limit ? { ...exit, limit } : exit;
}
