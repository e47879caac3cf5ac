/**
 * The load-set hash (SPEC §6.3), the upstream algorithm: SHA-256 over every file under the folder,
 * recursively, sorted by relative path (bytes, '/' separators). Per file: the path's UTF-8 byte
 * length as int32 little-endian, the path bytes, the content length as int64 little-endian, the
 * content. A symbolic link is hashed by its target text and must resolve inside the folder.
 * Moving the folder keeps the hash; changing any byte or name changes it.
 */
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, realpathSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { CxError } from "../errors.ts";

export interface LoadSet {
  folder: string;
  hash: string;
  /** Relative paths, in hashing order. */
  files: string[];
  /** The library's bytes, read once: the same bytes are hashed and then loaded. */
  library?: Buffer;
}

interface Entry {
  path: string; // relative, '/' separators
  bytes: Buffer; // UTF-8 of `path`
  absolute: string;
  link: string | null; // target text when a symbolic link
}

function walk(folder: string, realFolder: string): Entry[] {
  const out: Entry[] = [];
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const absolute = join(dir, name);
      const stat = lstatSync(absolute);
      const path = relative(folder, absolute).split(sep).join("/");
      if (stat.isSymbolicLink()) {
        const target = readlinkSync(absolute);
        let real: string;
        try {
          real = realpathSync(absolute);
        } catch {
          throw escape(path, target, folder, "it points nowhere");
        }
        if (real !== realFolder && !real.startsWith(realFolder + sep)) throw escape(path, target, folder, "it points outside the folder");
        out.push({ path, bytes: Buffer.from(path), absolute, link: target });
      } else if (stat.isDirectory()) {
        visit(absolute);
      } else if (stat.isFile()) {
        out.push({ path, bytes: Buffer.from(path), absolute, link: null });
      }
      // sockets, fifos and devices carry no content to approve and are left out
    }
  };
  visit(folder);
  return out.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
}

function escape(path: string, target: string, folder: string, why: string): CxError {
  return new CxError("E_LOAD", `the plugin's folder ${folder} holds a symbolic link '${path}' → '${target}', and ${why}`, {
    hint: "every file a plugin loads must live inside its own folder, so that approving the folder covers it",
  });
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

function u64le(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(n));
  return b;
}

/** Hashes a load set. With `library`, that file's bytes are kept in the result. */
export function loadSetHash(folder: string, library?: string): LoadSet {
  const realFolder = realpathSync(folder);
  const entries = walk(folder, realFolder);
  // The library may be a link to a file beside it: its bytes are that file's.
  const libraryPath = library === undefined ? undefined : relative(realFolder, realpathSync(library)).split(sep).join("/");
  const hasher = new Bun.CryptoHasher("sha256");
  let libraryBytes: Buffer | undefined;
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (const entry of entries) {
    hasher.update(u32le(entry.bytes.length));
    hasher.update(entry.bytes);
    if (entry.link !== null) {
      const target = Buffer.from(entry.link);
      hasher.update(u64le(target.length));
      hasher.update(target);
      continue;
    }
    if (entry.path === libraryPath) {
      libraryBytes = readFileSync(entry.absolute);
      hasher.update(u64le(libraryBytes.length));
      hasher.update(libraryBytes);
      continue;
    }
    const fd = openSync(entry.absolute, "r");
    try {
      const size = lstatSync(entry.absolute).size;
      hasher.update(u64le(size));
      let done = 0;
      while (done < size) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - done), null);
        if (n <= 0) throw new CxError("E_LOAD", `${entry.absolute} changed while it was being hashed`, { hint: "try again" });
        hasher.update(chunk.subarray(0, n));
        done += n;
      }
    } finally {
      closeSync(fd);
    }
  }
  return { folder, hash: hasher.digest("hex"), files: entries.map((e) => e.path), library: libraryBytes };
}
