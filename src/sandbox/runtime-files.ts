/**
 * What every sandboxed plugin host may touch before any declaration: the files the runtime and
 * the host need to start and serve, measured on Linux 6.18 / Debian 12 / Bun 1.4 (a host started
 * under exactly these rules loads a native, a Cortex and a module plugin; test/integration/
 * sandbox.test.ts). One list, here; nothing else in cxagent grants a sandboxed host a path.
 *
 * - execute (read and run): the system's libraries and programs, and the folder of the runtime
 *   itself (the cxagent binary, or Bun and, from a checkout, the checkout: src/, node_modules/,
 *   bunfig.toml, ffi/build/).
 * - read: /proc (the host reads its own /proc/self: fds, maps, its sealed copies through
 *   /proc/self/fd/N) and the CPU facts under /sys the runtime sizes its threads by; the dynamic
 *   loader's cache; the time zone.
 * - device: /dev/null, /dev/zero, /dev/urandom, /dev/random (read, write, ioctl).
 * - write: the host's private ${tmp} (TMPDIR: the compiled binary unpacks its embedded shim there)
 *   and, for a module plugin, the snapshot folder its host writes the approved files into.
 */
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";

export interface RuntimeFiles {
  execute: string[];
  read: string[];
  device: string[];
}

/**
 * The address space the runtime itself reserves: Bun 1.4.5 does not start under an RLIMIT_AS of
 * 352 MiB and does at 368 MiB (`bun -e`); a host with its shim's threads needs more. `memoryMiB`
 * is what the plugin may add to this, so RLIMIT_AS is memoryMiB + this.
 */
export const RUNTIME_ADDRESS_SPACE_MIB = 512;
/**
 * The JIT's executable memory a host under RLIMIT_AS reserves (BUN_JSC_jitMemoryReservationSize):
 * Bun's default reservation fails under a few GiB of address space, and without a JIT bun:ffi
 * cannot load a plugin ("bun:ffi requires the JIT"). With 64 MiB, a host loads its plugin under
 * 448 MiB (not under 384 MiB).
 */
export const RUNTIME_JIT_RESERVATION_MIB = 64;

/**
 * The tasks (a pids cgroup counts threads as processes) a plugin host uses of its own besides its
 * shim's pool of call threads (--pool-cap): Bun's threads. Measured: 9 in a native host after a
 * call; the rest is room for the runtime's lazily started threads. `processes` is what the plugin
 * may add, so pids.max is processes + this + the pool's cap.
 */
export const RUNTIME_TASKS = 24;

/** `executable`: the runtime's own file (process.execPath); `checkout`: the source tree when run from one. */
export function runtimeFiles(executable: string, checkout: string | null): RuntimeFiles {
  return {
    execute: ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", dirname(executable), ...(checkout ? [checkout, ...linkedPackages(checkout)] : [])],
    read: ["/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/etc/ld.so.cache", "/etc/localtime"],
    device: ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"],
  };
}

/** The checkout this file is part of when run from source, else null (the compiled binary). */
export function checkoutRoot(): string | null {
  if (import.meta.url.includes("$bunfs") || Bun.main.startsWith("/$bunfs/")) return null;
  return join(import.meta.dir, "../..");
}

/** A checkout's node_modules where it is a link to another folder (a scratch copy's): Landlock sees the real path. */
function linkedPackages(checkout: string): string[] {
  try {
    const real = realpathSync(join(checkout, "node_modules"));
    return real === join(checkout, "node_modules") ? [] : [real];
  } catch {
    return [];
  }
}
