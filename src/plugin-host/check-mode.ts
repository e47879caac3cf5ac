/**
 * The plugin host's check mode (`--check`, for `cxagent check`): the shim's watching wrappers
 * (ffi/shim/95-check.c) stand in for the plugin's exports and the host table, and this file gives
 * them what they compare with — where each loaded library's segments lie in memory, so a string
 * literal or a static buffer returned as if it were malloc'd is named as such, and whether the
 * C library is glibc, whose heap the free check reads. An ordinary plugin host never loads it.
 */
import { CString, type Pointer, ptr, read } from "bun:ffi";
import type { Libc } from "./libc.ts";
import type { Shim } from "./shim.ts";

/** Where a segment is, as the shim's ck_where names it (95-check.c). */
const PLUGIN_READ_ONLY = 1n;
const PLUGIN_WRITABLE = 2n;
const LIBRARY = 3n;
const ELF_MAGIC = 0x464c457f;
const PT_LOAD = 1;
const PF_W = 2;
const PR_SET_CHILD_SUBREAPER = 36;

export interface CheckMode {
  /** cxagent_plugin_describe, through its wrapper; hand the answer to `free`. */
  describe(): Pointer | null;
  free(p: Pointer): void;
  /** The host table for attach, every function watched. */
  table(): Pointer | null;
  /** As shim.setExports, with the wrappers in the plugin's place. */
  setExports(addresses: readonly (bigint | number | null)[]): void;
}

/**
 * Turns check mode on. `library` is the dlopen handle of the plugin's library (glibc's and musl's
 * handles both begin like `struct link_map`: the load address, the name, the dynamic section,
 * then the next and previous object); `describe` and `free` are a cxagent plugin's exports (null
 * for a Cortex plugin, whose buffers ffi/shim/97-check-cortex.c watches). Returns an error
 * message when the shim could not begin.
 */
export function beginCheckMode(libc: Libc, shim: Shim, library: Pointer, describe: Pointer | null, free: Pointer | null): CheckMode | { error: string } {
  const ranges = segments(library);
  const table = new BigUint64Array(ranges.flat());
  const imports = new BigUint64Array(libc.addresses(["mincore", "sbrk"]));
  const glibc = /\/libc\.so\.6$/.test(libc.path) || libc.path === "libc.so.6";
  shim.keep.push(table, imports);
  // Orphans of what the plugin starts (a daemon's double fork) come to this host, not to init, so
  // the check still finds them among its descendants.
  libc.prctl(PR_SET_CHILD_SUBREAPER, 1);
  const rc = shim.check.begin(ptr(imports), ranges.length ? ptr(table) : null, ranges.length, 4096, heapStart(libc), glibc ? 1 : 0, describe, free);
  if (rc !== 0) return { error: "the shim could not begin check mode" };
  return {
    describe: () => shim.check.describe() as Pointer | null,
    free: (p) => shim.check.free(p),
    table: () => shim.check.table() as Pointer | null,
    setExports(addresses) {
      const exports = new BigUint64Array(addresses.map((a) => BigInt(a ?? 0)));
      shim.keep.push(exports);
      shim.check.exports(ptr(exports));
    },
  };
}

/**
 * [start, end, where] of every loadable segment of every loaded object whose ELF header is mapped
 * at its load address. The plugin's own are its library's and those of the libraries it ships:
 * the ones loaded from sealed copies (/proc/self/fd/N), as nothing else is (library.ts).
 */
function segments(library: Pointer): bigint[][] {
  const isOwn = (map: number) => map === Number(library) || nameOf(map).startsWith("/proc/self/fd/");
  let map = Number(library);
  while (map && read.ptr(map as Pointer, 32)) map = read.ptr(map as Pointer, 32);
  const out: bigint[][] = [];
  for (let guard = 0; map && guard < 4096; map = read.ptr(map as Pointer, 24), guard++) {
    const base = read.ptr(map as Pointer, 0);
    // The main program, when it is not position-independent, has load address 0 and its header elsewhere.
    if (!base || read.u32(base as Pointer, 0) !== ELF_MAGIC) continue;
    const phoff = Number(read.u64(base as Pointer, 32));
    const phentsize = read.u16(base as Pointer, 54);
    const phnum = read.u16(base as Pointer, 56);
    // The program headers are read where the first page maps them; anything else is not looked at.
    if (phoff + phentsize * phnum > 4096 || phentsize < 56) continue;
    for (let i = 0; i < phnum; i++) {
      const at = phoff + i * phentsize;
      if (read.u32(base as Pointer, at) !== PT_LOAD) continue;
      const flags = read.u32(base as Pointer, at + 4);
      const start = BigInt(base) + read.u64(base as Pointer, at + 16);
      const size = read.u64(base as Pointer, at + 40);
      const where = isOwn(map) ? ((flags & PF_W) !== 0 ? PLUGIN_WRITABLE : PLUGIN_READ_ONLY) : LIBRARY;
      out.push([start, start + size, where]);
    }
  }
  return out;
}

/** A loaded object's name (l_name), "" when it has none. */
function nameOf(map: number): string {
  const name = read.ptr(map as Pointer, 8);
  return name ? String(new CString(name as Pointer)) : "";
}

/** Where the main arena's heap begins: field 47 (start_brk) of /proc/self/stat; 0 when unknown. */
function heapStart(libc: Libc): bigint {
  try {
    const stat = libc.readText("/proc/self/stat") ?? "";
    const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[47 - 3];
    return field && /^\d+$/.test(field) ? BigInt(field) : 0n;
  } catch {
    return 0n;
  }
}

