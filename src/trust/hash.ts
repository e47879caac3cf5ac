/**
 * The load-set hash (SPEC §6.3), the upstream algorithm: SHA-256 over every file under the folder,
 * recursively, sorted by relative path (bytes, '/' separators). Per file: the path's UTF-8 byte
 * length as int32 little-endian, the path bytes, the content length as int64 little-endian, the
 * content. A symbolic link is hashed by its target text and must resolve inside the folder.
 * Moving the folder keeps the hash; changing any byte or name changes it.
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { CxError } from "../errors.ts";

/** One entry of a load set, as an approval records it so that "changed" can say what changed. */
export interface LoadSetFile {
  /** Relative path, `/` separators. */
  path: string;
  /** Bytes hashed: the file's length, or a symbolic link's target text length. */
  size: number;
  /** SHA-256 of those bytes, lowercase hex. */
  sha256: string;
}

export interface LoadSet {
  folder: string;
  /** The folder's real path (symbolic links resolved): what an approval is bound to. */
  realFolder: string;
  hash: string;
  /** Every entry, in hashing order. */
  files: LoadSetFile[];
  /**
   * The bytes read while hashing of every sidecar, every ELF file, the README.md and a Cortex
   * plugin's manifest.toml (by relative path) — of every file, for a module plugin, which imports
   * from these alone: the prompt, the hash and the load all use these, never a second read of the file.
   */
  kept: Map<string, Buffer>;
  /** Every symbolic link (relative path → target text), each resolving inside the folder. */
  links: Map<string, string>;
  /** The library's relative path (of its real file) when one was given. */
  libraryPath: string | null;
}

/** The kept bytes of the library the load set was hashed for. */
export function libraryBytes(set: LoadSet): Buffer | undefined {
  return set.libraryPath === null ? undefined : set.kept.get(set.libraryPath);
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

const CHUNK = 1 << 20;
let readChunk: Buffer | undefined;
const SIDECAR = ".plugin.json";
/** A Cortex plugin's manifest.toml, at the top of its load set. */
const CORTEX_MANIFEST = "manifest.toml";
const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

/**
 * Hashes a load set, reading each file once. Sidecars and ELF files are kept in memory, so what
 * is shown, hashed and loaded are the same bytes; any other file is streamed.
 */
export function loadSetHash(folder: string, library?: string, options: { keepAll?: boolean } = {}): LoadSet {
  try {
    return hashLoadSet(folder, library, options.keepAll === true);
  } catch (error) {
    // A file that vanished between listing and reading: someone is changing the folder right now.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    throw new CxError("E_LOAD", `the plugin's folder ${folder} changed while it was being hashed (${(error as Error).message})`, { hint: "try again once nothing is writing to it", cause: error });
  }
}

function hashLoadSet(folder: string, library: string | undefined, keepAll: boolean): LoadSet {
  const realFolder = realpathSync(folder);
  const entries = walk(folder, realFolder);
  // The library may be a link to a file beside it: its bytes are that file's.
  const libraryPath = library === undefined ? null : relative(realFolder, realpathSync(library)).split(sep).join("/");
  const hasher = new Bun.CryptoHasher("sha256");
  const files: LoadSetFile[] = [];
  const kept = new Map<string, Buffer>();
  const links = new Map<string, string>();
  // One buffer for every load set: hashing is synchronous, and a megabyte a plugin cost start-up its page faults.
  const chunk = (readChunk ??= Buffer.allocUnsafe(CHUNK));
  for (const entry of entries) {
    hasher.update(u32le(entry.bytes.length));
    hasher.update(entry.bytes);
    const own = new Bun.CryptoHasher("sha256");
    if (entry.link !== null) {
      const target = Buffer.from(entry.link);
      hasher.update(u64le(target.length));
      hasher.update(target);
      own.update(target);
      files.push({ path: entry.path, size: target.length, sha256: own.digest("hex") });
      links.set(entry.path, entry.link);
      continue;
    }
    const fd = openSync(entry.absolute, "r");
    try {
      const size = fstatSync(fd).size;
      hasher.update(u64le(size));
      const parts: Buffer[] = [];
      let keep = keepAll || entry.path.endsWith(SIDECAR) || entry.path === libraryPath || entry.path === "README.md" || entry.path === CORTEX_MANIFEST;
      let done = 0;
      while (done < size) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - done), null);
        if (n <= 0) throw new CxError("E_LOAD", `${entry.absolute} changed while it was being hashed`, { hint: "try again" });
        const piece = chunk.subarray(0, n);
        if (done === 0 && n >= 4 && piece.subarray(0, 4).equals(ELF_MAGIC)) keep = true;
        hasher.update(piece);
        own.update(piece);
        if (keep) parts.push(Buffer.from(piece));
        done += n;
      }
      if (keep) kept.set(entry.path, Buffer.concat(parts, size));
      files.push({ path: entry.path, size, sha256: own.digest("hex") });
    } finally {
      closeSync(fd);
    }
  }
  return { folder, realFolder, hash: hasher.digest("hex"), files, kept, links, libraryPath };
}
