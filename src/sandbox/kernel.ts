/**
 * The kernel calls the sandbox makes, through bun:ffi and the process's own C library: Landlock,
 * seccomp, prctl, unshare, setrlimit and execve. Bound on first use (the launcher and the probe
 * only; a plugin host never loads this file).
 */
import { dlopen, FFIType, type Pointer, ptr, toArrayBuffer } from "bun:ffi";
import { arch } from "node:process";

const SYMBOLS = {
  syscall: { args: [FFIType.i64, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i64 },
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
  unshare: { args: [FFIType.i32], returns: FFIType.i32 },
  open: { args: [FFIType.ptr, FFIType.i32, FFIType.u32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
  strerror: { args: [FFIType.i32], returns: FFIType.cstring },
  geteuid: { args: [], returns: FFIType.u32 },
} as const;

type Libc = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];
let bound: Libc | undefined;

export function libc(): Libc {
  bound ??= dlopen("libc.so.6", SYMBOLS).symbols;
  return bound;
}

/** errno after a failed call, and its text. */
export function lastError(): { errno: number; text: string } {
  const c = libc();
  const errno = new Int32Array(toBuffer(c.__errno_location() as Pointer, 4))[0]!;
  return { errno, text: String(c.strerror(errno)) };
}

function toBuffer(pointer: Pointer, length: number): ArrayBuffer {
  return toArrayBuffer(pointer, 0, length);
}

/** The system call numbers this file and seccomp.ts use, per architecture the sandbox knows. */
export const SYSCALLS = {
  x64: {
    auditArch: 0xc000003e,
    landlock_create_ruleset: 444, landlock_add_rule: 445, landlock_restrict_self: 446, seccomp: 317,
    ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, bpf: 321, mount: 165, umount2: 166,
    kexec_load: 246, kexec_file_load: 320, unshare: 272, setns: 308, pivot_root: 155, chroot: 161,
    init_module: 175, finit_module: 313, delete_module: 176, swapon: 167, swapoff: 168, reboot: 169,
    perf_event_open: 298, userfaultfd: 323, keyctl: 250, add_key: 248, request_key: 249,
    open_by_handle_at: 304, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432,
    fspick: 433, mount_setattr: 442, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    clone: 56, clone3: 435, socket: 41, socketpair: 53,
  },
  arm64: {
    auditArch: 0xc00000b7,
    landlock_create_ruleset: 444, landlock_add_rule: 445, landlock_restrict_self: 446, seccomp: 277,
    ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, bpf: 280, mount: 40, umount2: 39,
    kexec_load: 104, kexec_file_load: 294, unshare: 97, setns: 268, pivot_root: 41, chroot: 51,
    init_module: 105, finit_module: 273, delete_module: 106, swapon: 224, swapoff: 225, reboot: 142,
    perf_event_open: 241, userfaultfd: 282, keyctl: 219, add_key: 217, request_key: 218,
    open_by_handle_at: 265, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432,
    fspick: 433, mount_setattr: 442, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    clone: 220, clone3: 435, socket: 198, socketpair: 199,
  },
} as const;
export type Syscalls = (typeof SYSCALLS)["x64"] | (typeof SYSCALLS)["arm64"];

/** This machine's numbers, or null on an architecture the sandbox does not know. */
export function syscalls(): Syscalls | null {
  return arch === "x64" ? SYSCALLS.x64 : arch === "arm64" ? SYSCALLS.arm64 : null;
}

/** A syscall's result as a number (negative: failed, errno in lastError()). */
export function sys(nr: number, a = 0, b = 0, c = 0, d = 0, e = 0): number {
  return Number(libc().syscall(nr, a, b, c, d, e));
}

/** The Landlock ABI this kernel offers (0: none, or Landlock is off). */
export function landlockAbi(): number {
  const nr = syscalls()?.landlock_create_ruleset;
  if (nr === undefined) return 0;
  const abi = sys(nr, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
  return abi > 0 ? abi : 0;
}

export const PR_SET_NO_NEW_PRIVS = 38;
export const PR_GET_SECCOMP = 21;

/** Whether seccomp filters can be installed here (CONFIG_SECCOMP_FILTER): prctl(PR_GET_SECCOMP) answers. */
export function seccompAvailable(): boolean {
  return syscalls() !== null && libc().prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
}

export const RLIMIT = { NPROC: 6, NOFILE: 7, AS: 9, CORE: 4 } as const;

/** setrlimit(resource, {value, value}); true when it took. */
export function setLimit(resource: number, value: bigint): boolean {
  const limit = new BigUint64Array([value, value]);
  return libc().setrlimit(resource, ptr(limit)) === 0;
}

/** A NUL-terminated C string in memory that stays alive as long as the returned buffer. */
export function cString(text: string): Buffer {
  return Buffer.from(text + "\0", "utf8");
}

/**
 * execve(path, argv, env), its arguments built first: `before` runs last, just before the call
 * (the launcher lowers RLIMIT_AS there, after which this runtime may no longer map memory, so
 * nothing is allocated between the two). Returns only when execve failed.
 */
export function execve(path: string, argv: readonly string[], env: Record<string, string>, before: () => void = () => {}): { errno: number; text: string } {
  const keep: Buffer[] = [];
  const array = (items: string[]) => {
    const pointers = new BigUint64Array(items.length + 1);
    items.forEach((item, i) => {
      const s = cString(item);
      keep.push(s);
      pointers[i] = BigInt(ptr(s));
    });
    return pointers;
  };
  const file = cString(path);
  const call = libc().execve;
  const [filePtr, argsPtr, varsPtr] = [ptr(file), ptr(array([...argv])), ptr(array(Object.entries(env).map(([k, v]) => `${k}=${v}`)))];
  before();
  call(filePtr, argsPtr, varsPtr);
  void keep;
  return lastError();
}
