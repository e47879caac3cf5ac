/**
 * An exclusive lock on a state file, held across read → modify → rename so concurrent writers
 * lose nothing (SPEC §6.3, §11). It is flock(2) on a hidden `.<name>.lock` beside the file: the
 * kernel releases it when its holder exits in any way, kill -9 included, so a crashed writer never
 * leaves the store locked. The lock file itself is never removed (removing it would let two
 * writers lock two different files).
 */
import { dlopen, FFIType } from "bun:ffi";
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { CxError } from "./errors.ts";
import { linuxLibc } from "./libc.ts";

const LOCK_EX = 2;
const LOCK_NB = 4;
/** How long a writer waits for another to finish before it gives up (they hold it for milliseconds). */
export const LOCK_WAIT_MS = 10_000;

let flock: ((fd: number, operation: number) => number) | null | undefined;

function flockFunction(): ((fd: number, operation: number) => number) | null {
  if (flock !== undefined) return flock;
  const libc = linuxLibc(); // Linux: the C library every other binding uses (libc.ts)
  if (libc) return (flock = (fd, operation) => libc.flock(fd, operation));
  flock = null;
  // Stryker disable all: macOS only; the suite runs on Linux, where the lines above return first
  for (const name of process.platform === "darwin" ? ["libSystem.B.dylib"] : []) {
    try {
      const lib = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
      flock = (fd, operation) => lib.symbols.flock(fd, operation);
      break;
    } catch {
      // try the next name
    }
  }
  // Stryker restore all
  return flock;
}

/**
 * Takes flock(2)'s exclusive lock on `fd` without waiting: true when taken, false when another
 * open file holds it, null where there is no flock (then nothing can be proven by it).
 */
export function tryLock(fd: number): boolean | null {
  const lock = flockFunction();
  if (!lock) return null;
  return lock(fd, LOCK_EX | LOCK_NB) === 0;
}

export function lockPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.lock`);
}

/** Runs `fn` holding the exclusive lock of `path` (which need not exist). */
export function withFileLock<T>(path: string, fn: () => T, waitMs = LOCK_WAIT_MS): T {
  const lock = flockFunction();
  if (!lock) return fn(); // no flock on this platform: writes are still atomic, not serialized
  const lockPath = lockPathOf(path);
  let fd: number;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // O_NOFOLLOW: a link planted in the lock's place is refused, not followed to create or lock
    // a file elsewhere.
    fd = openSync(lockPath, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw notRegular(path, lockPath, "a symbolic link");
    if (code === "EISDIR") throw notRegular(path, lockPath, "a folder");
    throw new CxError("E_STATE", `cannot write ${path}: its lock file ${lockPath} cannot be opened (${(error as Error).message})`, {
      cause: error,
      hint: `check that ${dirname(path)} exists and is writable, or use another state folder`,
      next: { do: "choose-folder", which: "state", path: dirname(path) },
    });
  }
  try {
    // A FIFO, a device or a folder in the lock's place is not locked through (O_NONBLOCK: a FIFO is not waited on).
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(path, lockPath, stat.isFIFO() ? "a FIFO" : "a special file");
    const deadline = Date.now() + waitMs;
    let pause = 1;
    while (lock(fd, LOCK_EX | LOCK_NB) !== 0) {
      if (Date.now() >= deadline) {
        const holder = holderOf(fd);
        throw new CxError("E_STATE", `${path} stayed locked for ${waitMs / 1000} s${holder ? ` by process ${holder}` : ""}, so it was not changed`, {
          hint: holder ? `another cxagent is writing it; if process ${holder} is stuck, end it and try again` : "another cxagent is writing it; try again",
          details: { path, holder },
        });
      }
      Bun.sleepSync(pause);
      pause = Math.min(pause * 2, 20);
    }
    return fn();
  } finally {
    closeSync(fd); // closing the only descriptor releases the lock
  }
}

function notRegular(path: string, lockPath: string, what: string): CxError {
  return new CxError("E_STATE", `cannot write ${path}: its lock file ${lockPath} is ${what}, not a regular file, so it was not used`, {
    hint: `cxagent makes that file itself; if you did not put it there, someone else may have: check who owns ${dirname(path)}, then remove ${lockPath}`,
    details: { path, lockPath },
  });
}

/** The pid holding a flock on the file `fd` is open on, from /proc/locks (Linux), if it can be told. */
function holderOf(fd: number): number | null {
  try {
    const inode = fstatSync(fd).ino;
    for (const line of readFileSync("/proc/locks", "utf8").split("\n")) {
      const fields = line.trim().split(/\s+/);
      // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
      if (fields[1] === "FLOCK" && fields[5]?.split(":")[2] === String(inode)) return Number(fields[4]);
    }
  } catch {
    // not Linux, or /proc/locks unreadable
  }
  return null;
}
