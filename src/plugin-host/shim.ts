/**
 * Loads the native shim (ffi/shim/*.c) that serves the protocol: the copy built by
 * `scripts/build-native.ts` (embedded in the compiled binary), or, when there is none or it is
 * older than its source, the source compiled in memory by Bun's TinyCC. Neither needs a C
 * compiler or C headers at run time. node:fs and the source's layout load only on the way to
 * TinyCC, or when the parent did not say which built shim to load (src/shim-source.ts).
 */
import { cc, dlopen, FFIType, type Pointer, ptr, toArrayBuffer } from "bun:ffi";
import type { Libc } from "./libc.ts";

// The order of SHIM_IMPORT_LIST in ffi/shim/00-libc.c.
const IMPORTS = [
  "malloc", "realloc", "free", "read", "write", "__errno_location", "poll", "open", "close",
  "pthread_create", "pthread_detach", "pthread_key_create", "pthread_getspecific", "pthread_setspecific",
  "pthread_mutex_init", "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_init",
  "pthread_cond_wait", "pthread_cond_broadcast", "pthread_cond_timedwait", "clock_gettime",
  "getpid", "getppid", "getpgrp", "kill", "syscall", "signal", "opendir", "readdir", "closedir",
] as const;

const SYMBOLS = {
  shim_imports: { args: [FFIType.ptr], returns: FFIType.void },
  shim_import_count: { args: [], returns: FFIType.i32 },
  shim_init: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.i32, FFIType.i32, FFIType.i64, FFIType.i32], returns: FFIType.i32 },
  shim_set_exports: { args: [FFIType.ptr], returns: FFIType.void },
  shim_table: { args: [], returns: FFIType.ptr },
  shim_write: { args: [FFIType.ptr, FFIType.i64], returns: FFIType.i32 },
  shim_serve: { args: [FFIType.i32], returns: FFIType.i32 },
  shim_wait: { args: [], returns: FFIType.i32 },
  shim_guard: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  // A Cortex plugin's table (ffi/shim/85-cortex.c).
  shim_cortex_set: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  shim_cortex_info: { args: [FFIType.ptr], returns: FFIType.ptr },
  shim_cortex_count: { args: [], returns: FFIType.u64 },
  shim_cortex_descriptor: { args: [FFIType.u64, FFIType.ptr], returns: FFIType.ptr },
  shim_cortex_release: { args: [FFIType.ptr], returns: FFIType.void },
  // Check mode (ffi/shim/95-check.c, 96-check-table.c; plugin-host/check-mode.ts).
  shim_check_begin: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32, FFIType.i64, FFIType.u64, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  shim_check_describe: { args: [], returns: FFIType.ptr },
  shim_check_free: { args: [FFIType.ptr], returns: FFIType.void },
  shim_check_table: { args: [], returns: FFIType.ptr },
  shim_check_exports: { args: [FFIType.ptr], returns: FFIType.void },
  shim_cortex_check: { args: [], returns: FFIType.void },
  shim_orphaned: { args: [], returns: FFIType.i32 },
  shim_end_group: { args: [], returns: FFIType.void },
} as const;

function isCompiled(): boolean {
  return import.meta.url.includes("$bunfs") || Bun.main.startsWith("/$bunfs/");
}

async function openShim(built: string | null) {
  if (isCompiled()) {
    const embedded = (await import("./_shim-embedded.ts")).default;
    try {
      return { lib: dlopen(embedded.library, SYMBOLS), how: "embedded" };
    } catch {
      // e.g. a noexec $TMPDIR: compile the embedded source instead
      return compileShim(await Bun.file(embedded.source).text());
    }
  }
  if (built !== null) return { lib: dlopen(built, SYMBOLS), how: "built" };
  const source = await import("../shim-source.ts");
  if (source.builtShimIsFresh()) return { lib: dlopen(source.SHIM_BUILT, SYMBOLS), how: "built" };
  return compileShim(source.joinShim());
}

async function compileShim(source: string) {
  const [{ mkdtempSync, rmSync, writeFileSync }, { tmpdir }, { join }] = await Promise.all([import("node:fs"), import("node:os"), import("node:path")]);
  // TinyCC cannot read from the compiled binary's virtual file system, so the text goes to disk.
  const dir = mkdtempSync(join(tmpdir(), "cxagent-shim-"));
  try {
    const file = join(dir, "cxagent_shim.c");
    writeFileSync(file, source);
    return { lib: cc({ source: file, flags: ["-nostdinc", "-nostdlib"], symbols: SYMBOLS }), how: "tinycc" };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `built`: the built shim the parent found fresh (protocol/host-args.ts), or null to look here. */
export async function loadShim(libc: Libc, built: string | null = null) {
  const { lib, how } = await openShim(built);
  const s = lib.symbols;
  if (s.shim_import_count() !== IMPORTS.length) {
    throw new Error(`the shim expects ${s.shim_import_count()} imports, the loader has ${IMPORTS.length}`);
  }
  const imports = new BigUint64Array(libc.addresses(IMPORTS));
  s.shim_imports(ptr(imports));
  const keep: unknown[] = [lib, imports];
  return {
    how,
    init: (outFd: number, inFd: number, contract: number, poolCap: number, pollMs: number, lineCap: number, spinUs: number) =>
      s.shim_init(outFd, inFd, contract, poolCap, pollMs, lineCap, spinUs),
    setExports(addresses: readonly (bigint | number | null)[]) {
      const table = new BigUint64Array(addresses.map((a) => BigInt(a ?? 0)));
      keep.push(table);
      s.shim_set_exports(ptr(table));
    },
    table: () => s.shim_table(),
    /** Writes one whole protocol line through the shim's lock. */
    writeLine(value: unknown) {
      const bytes = Buffer.from(JSON.stringify(value) + "\n");
      return s.shim_write(ptr(bytes), bytes.length);
    },
    /** Writes text that is one or more whole protocol lines, through the same lock. */
    writeText(text: string) {
      const bytes = Buffer.from(text);
      return s.shim_write(ptr(bytes), bytes.length);
    },
    serve: (threads: number) => s.shim_serve(threads),
    /** Starts the native thread that ends this host's process group when `parent` dies; 0 once it runs. */
    guard: (parent: number, orphanGraceMs: number) => s.shim_guard(parent, orphanGraceMs),
    wait: () => s.shim_wait(),
    cortex: cortexPart(s, keep),
    /** Check mode's entry points (see plugin-host/check-mode.ts). */
    check: {
      begin: s.shim_check_begin,
      describe: s.shim_check_describe,
      free: s.shim_check_free,
      table: s.shim_check_table,
      exports: s.shim_check_exports,
      /** A Cortex plugin's buffers judged and its calls' buffers lent as copies (ffi/shim/97-check-cortex.c). */
      cortex: s.shim_cortex_check,
    },
    /** For a host that reads its requests itself: whether its parent is gone or on its way out. */
    orphaned: () => s.shim_orphaned() !== 0,
    /** Ends this host's process group as the watcher does (SIGTERM, grace, SIGKILL); never returns. */
    endGroup: () => s.shim_end_group(),
    keep,
  };
}

export type Shim = Awaited<ReturnType<typeof loadShim>>;

/** What a Cortex plugin's buffer held: its bytes, or why there were none (see cortex_take). */
export type CortexText = { bytes: Uint8Array } | { problem: string };

const CORTEX_PROBLEMS: Record<string, string> = {
  "-1": "an empty buffer",
  "-2": "a buffer whose len is larger than its cap",
  "-3": "a buffer larger than the line cap allows",
  "-4": "a buffer the plugin host had no memory to copy",
  "-5": "a buffer whose ptr is NULL but whose len is not 0",
};

/** The shim's side of a Cortex plugin: it holds the table and copies (and frees) every buffer. */
function cortexPart(s: Awaited<ReturnType<typeof openShim>>["lib"]["symbols"], keep: unknown[]) {
  const length = new BigInt64Array(1);
  const take = (copy: Pointer | null): CortexText => {
    const n = Number(length[0]);
    if (!copy) return { problem: CORTEX_PROBLEMS[String(n)] ?? `an unreadable buffer (${n})` };
    try {
      return { bytes: new Uint8Array(toArrayBuffer(copy, 0, n)).slice() };
    } finally {
      s.shim_cortex_release(copy);
    }
  };
  return {
    /**
     * Hands over the 64-byte table cortex_plugin_init filled, and what every call's
     * InvocationContext says besides its tool and scope: the session, the actor (none), the source.
     */
    set(table: Uint8Array, sessionId: string | null, source: string): boolean {
      const session = Buffer.from(`"session_id":${JSON.stringify(sessionId)},"actor":null,"source":${JSON.stringify(source)}\0`);
      keep.push(table, session);
      return s.shim_cortex_set(ptr(table), ptr(session)) === 0;
    },
    info: () => take(s.shim_cortex_info(ptr(length)) as Pointer | null),
    count: () => BigInt(s.shim_cortex_count()),
    descriptor: (index: number) => take(s.shim_cortex_descriptor(index, ptr(length)) as Pointer | null),
  };
}
