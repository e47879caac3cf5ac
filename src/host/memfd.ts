/**
 * A sealed in-memory copy of a library (Linux memfd): the plugin host loads exactly the bytes that
 * were hashed and approved, even if the file on disk is replaced or rewritten meanwhile.
 */
import { closeSync, fstatSync, readSync, writeSync } from "node:fs";
import { linuxLibc } from "../libc.ts";

const MFD_CLOEXEC = 1;
const MFD_ALLOW_SEALING = 2;
const F_ADD_SEALS = 1033;
const SEALS = 1 | 2 | 4 | 8; // seal, shrink, grow, write

/** Returns an fd holding `bytes`, sealed against change, or null where memfd is unavailable. */
export function sealedCopy(bytes: Uint8Array, name: string): number | null {
  const fd = sealableFile(name);
  if (fd === null) return null;
  if (fillAndSeal(fd, bytes)) return fd;
  closeSync(fd);
  return null;
}

/** An empty memfd that can be sealed later (see fillAndSeal), or null where memfd is unavailable. */
export function sealableFile(name: string): number | null {
  const libc = linuxLibc();
  if (!libc) return null;
  const fd = libc.memfd_create(Buffer.from(`cxagent:${name}\0`), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  return fd < 0 ? null : fd;
}

/** Writes `bytes` into an empty sealable file and seals it against every change; false if it could not. */
export function fillAndSeal(fd: number, bytes: Uint8Array): boolean {
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, done);
    return linuxLibc()!.fcntl(fd, F_ADD_SEALS, SEALS) === 0;
  } catch {
    return false;
  }
}

/**
 * Whether the (sealed) file holds exactly `bytes`, no more, no less. A file that was open in
 * another process before it was sealed (a prepared host's, host/prepared.ts) may have been
 * written by whoever could open it there; once sealed it cannot change, so one comparison settles it.
 */
export function holdsExactly(fd: number, bytes: Uint8Array): boolean {
  try {
    if (fstatSync(fd).size !== bytes.length) return false;
    const read = Buffer.alloc(bytes.length);
    let done = 0;
    while (done < read.length) {
      const n = readSync(fd, read, done, read.length - done, done);
      if (n === 0) return false;
      done += n;
    }
    return read.equals(bytes);
  } catch {
    return false;
  }
}
