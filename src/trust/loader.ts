/**
 * What the system's dynamic loader (glibc's ld.so) knows before it looks anywhere a plugin chose:
 * its cache (/etc/ld.so.cache), its default folders, and the libraries every plugin host already
 * has loaded (the executable's own DT_NEEDED), which it matches by soname without searching.
 * Read once per process.
 */
import { closeSync, existsSync, openSync, readFileSync, realpathSync } from "node:fs";
import { dirname } from "node:path";
import { fileSource, readDynamic } from "../elf/elf.ts";

const CACHE_FILE = "/etc/ld.so.cache";
const CACHE_MAGIC = "glibc-ld.so.cache1.1";
const OLD_MAGIC = "ld.so-1.7.0";
const FLAG_ELF_LIBC6 = 3;
/** The cache flags the loader requires for each machine's 64-bit libraries (glibc's ldconfig.h). */
const REQUIRED_FLAGS: Record<number, number> = { 62: 0x0300, 183: 0x0a00 }; // x86-64, AArch64

export interface SystemLoader {
  /** Where the loader's cache sends `name` for this machine, if anywhere. */
  cached(name: string, machine: number): string | null;
  /** The loader's default folders, in search order. */
  defaultDirs: string[];
  /** Whether a folder (real path) is one the system's loader owns: a default folder or one its cache covers. */
  isSystemDir(realDir: string): boolean;
  /** Sonames the plugin host has loaded before any plugin: matched, never searched. */
  hostLoaded: Set<string>;
}

let loaded: SystemLoader | undefined;

export function systemLoader(): SystemLoader {
  return (loaded ??= readSystemLoader());
}

/** Each part is read the first time it is asked for: most plugins need only what the host has loaded. `cacheFile`: another cache, for tests. */
export function readSystemLoader(cacheFile = CACHE_FILE): SystemLoader {
  const triplet = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  const defaultDirs = [`/lib/${triplet}`, `/usr/lib/${triplet}`, "/lib64", "/usr/lib64", "/lib", "/usr/lib"];
  let entries: CacheEntry[] | undefined;
  let systemDirs: Set<string> | undefined;
  const cache = () => (entries ??= readCache(cacheFile));
  return {
    cached(name, machine) {
      const required = REQUIRED_FLAGS[machine];
      const hit = cache().find((e) => e.name === name && (e.flags & 0xff) === FLAG_ELF_LIBC6 && (required === undefined || (e.flags & 0xff00) === required));
      return hit?.path ?? null;
    },
    defaultDirs,
    isSystemDir(realDir) {
      if (!systemDirs) {
        systemDirs = new Set();
        for (const dir of new Set([...defaultDirs, ...cache().map((e) => dirname(e.path))])) {
          const real = realOrNull(dir);
          if (real) systemDirs.add(real);
        }
      }
      return systemDirs.has(realDir);
    },
    hostLoaded: executableNeeds(),
  };
}

function realOrNull(path: string): string | null {
  try {
    return existsSync(path) ? realpathSync(path) : null;
  } catch {
    return null;
  }
}

/**
 * The compiled binary's own DT_NEEDED, read by scripts/compile.ts from the Bun executable it is
 * built on (`bun build --compile` keeps that dynamic section as it is) and checked there against
 * the binary it wrote. Not defined when cxagent runs from a checkout.
 */
declare const CXAGENT_EXECUTABLE_NEEDS: readonly string[] | undefined;

/**
 * The libraries the executable that runs every plugin host links (Bun's, or the compiled
 * cxagent's, which is the same program): they are mapped before any plugin. The compiled binary
 * knows its own: reading them from its 110 MiB file made a one-shot invoke about 2 ms slower
 * (without against with, 30 paired runs: wall ratio 0.71 / 0.88 / 1.14).
 */
function executableNeeds(): Set<string> {
  if (typeof CXAGENT_EXECUTABLE_NEEDS !== "undefined") return new Set(CXAGENT_EXECUTABLE_NEEDS);
  try {
    return new Set(neededBy(process.execPath));
  } catch {
    return new Set(); // nothing assumed loaded: every name is then searched for, which is stricter
  }
}

/** The DT_NEEDED of the program at `path`, read with positioned reads; throws if it cannot be read. */
export function neededBy(path: string): string[] {
  const fd = openSync(path, "r");
  try {
    return readDynamic(fileSource(fd), { executable: true }).needed;
  } finally {
    closeSync(fd);
  }
}

interface CacheEntry {
  flags: number;
  name: string;
  path: string;
}

/** glibc's cache, new format (alone, or after the old one); an unreadable cache is an empty one. */
function readCache(cacheFile: string): CacheEntry[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(cacheFile);
  } catch {
    return [];
  }
  let base = 0;
  if (bytes.subarray(0, OLD_MAGIC.length).toString("latin1") === OLD_MAGIC) {
    if (bytes.length < 16) return [];
    const oldCount = bytes.readUInt32LE(12);
    base = 16 + oldCount * 12;
    base = (base + 7) & ~7; // the new table is aligned after the old one
  }
  if (bytes.length < base + 48 || bytes.subarray(base, base + CACHE_MAGIC.length).toString("latin1") !== CACHE_MAGIC) return [];
  const count = bytes.readUInt32LE(base + 20);
  const entriesAt = base + 48;
  if (entriesAt + count * 24 > bytes.length) return [];
  const string = (offset: number): string | null => {
    const start = base + offset;
    if (start >= bytes.length) return null;
    const end = bytes.indexOf(0, start);
    return end < 0 ? null : bytes.subarray(start, end).toString("utf8");
  };
  const entries: CacheEntry[] = [];
  for (let i = 0; i < count; i++) {
    const at = entriesAt + i * 24;
    const name = string(bytes.readUInt32LE(at + 4));
    const path = string(bytes.readUInt32LE(at + 8));
    if (name && path?.startsWith("/")) entries.push({ flags: bytes.readInt32LE(at), name, path });
  }
  return entries;
}
