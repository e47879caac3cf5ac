/**
 * The seccomp filter of a sandboxed plugin host, built as classic BPF here (no libseccomp): on
 * another architecture than the one the filter was built for, the process is killed; the calls
 * that reach past a plugin's own process fail with EPERM (ptrace, process_vm_*, bpf, mount and
 * the new mount API, kexec, modules, keyrings, perf, userfaultfd, io_uring — whose operations
 * seccomp cannot see —, setns, unshare and a clone that asks for a namespace); clone3, whose flags
 * a filter cannot read, answers ENOSYS so that the C library falls back to clone; and, unless the
 * network is declared, socket and socketpair accept AF_UNIX only. On x86_64, the x32 ABI's call
 * numbers (bit 30 set, under the same audit architecture) answer ENOSYS, as on a kernel built
 * without x32: otherwise `mount | 0x40000000` would pass a filter that refuses `mount`.
 *
 * Only the calls named above read an argument; every other number reaches ALLOW having looked at
 * nothing but the architecture and the number, so the kernel's action cache allows it without
 * running the program (Linux 5.11; test/unit/sandbox-seccomp.test.ts holds this for the calls a
 * warm host makes). Measured on the 2-vCPU VM (Linux 6.18): this filter and one that is a lone
 * ALLOW cost the same, about 55 ns on each system call (seccomp's entry work), against 165 ns
 * for getppid unconfined; a filter that reads an argument first costs about 17 ns more.
 *
 * Built here, in the parent, as the launcher's plan (launch-plan.ts); installed on the launcher's one
 * thread (no TSYNC), which then execve's the host: the filter is inherited.
 */
import { ptr } from "bun:ffi";
import { lastError, sys, type Syscalls, syscalls } from "./kernel.ts";

const LD_W_ABS = 0x20, JEQ_K = 0x15, JGE_K = 0x35, JSET_K = 0x45, RET_K = 0x06;
const ALLOW = 0x7fff0000, KILL_PROCESS = 0x80000000, ERRNO = 0x00050000;
const EPERM = 1, ENOSYS = 38, AF_UNIX = 1;
const AUDIT_ARCH_X86_64 = 0xc000003e, X32_SYSCALL_BIT = 0x40000000;
/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
const NAMESPACE_FLAGS = 0x7e020000;

type Insn = [code: number, jt: number, jf: number, k: number];

const DENIED = [
  "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "mount", "umount2", "kexec_load", "kexec_file_load",
  "unshare", "setns", "pivot_root", "chroot", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
  "reboot", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "open_tree",
  "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "io_uring_setup", "io_uring_enter",
  "io_uring_register",
] as const;

/** The filter's instructions; `unixOnly`: socket families other than AF_UNIX are refused. */
export function filterProgram(nr: Syscalls, unixOnly: boolean): Insn[] {
  const p: Insn[] = [];
  const nrAt = 0, archAt = 4, arg0 = 16;
  p.push([LD_W_ABS, 0, 0, archAt], [JEQ_K, 1, 0, nr.auditArch], [RET_K, 0, 0, KILL_PROCESS], [LD_W_ABS, 0, 0, nrAt]);
  if (nr.auditArch === AUDIT_ARCH_X86_64) p.push([JGE_K, 0, 1, X32_SYSCALL_BIT], [RET_K, 0, 0, ERRNO | ENOSYS]);
  for (const name of DENIED) p.push([JEQ_K, 0, 1, nr[name]], [RET_K, 0, 0, ERRNO | EPERM]);
  p.push([JEQ_K, 0, 1, nr.clone3], [RET_K, 0, 0, ERRNO | ENOSYS]);
  // clone: look at its flags; a namespace asked for is refused, anything else allowed.
  p.push([JEQ_K, 0, 4, nr.clone], [LD_W_ABS, 0, 0, arg0], [JSET_K, 0, 1, NAMESPACE_FLAGS], [RET_K, 0, 0, ERRNO | EPERM], [RET_K, 0, 0, ALLOW]);
  if (unixOnly) {
    for (const call of [nr.socket, nr.socketpair]) {
      p.push([JEQ_K, 0, 4, call], [LD_W_ABS, 0, 0, arg0], [JEQ_K, 1, 0, AF_UNIX], [RET_K, 0, 0, ERRNO | EPERM], [RET_K, 0, 0, ALLOW]);
    }
  }
  p.push([RET_K, 0, 0, ALLOW]);
  return p;
}

/** The filter as the kernel reads it (struct sock_filter[]), in hexadecimal: the launcher's `seccomp` word. */
const hexMemo = new Map<string, string>();

export function filterHex(nr: Syscalls, unixOnly: boolean): string {
  const key = `${nr.auditArch}:${unixOnly}`;
  const known = hexMemo.get(key);
  if (known !== undefined) return known;
  const program = filterProgram(nr, unixOnly);
  const view = new DataView(new ArrayBuffer(program.length * 8));
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  const hex = Buffer.from(view.buffer).toString("hex");
  hexMemo.set(key, hex);
  return hex;
}

/** Installs a filter given as filterHex wrote it on this thread (no_new_privs must be set). Throws naming why it failed. */
export function installFilter(hex: string): void {
  const filter = new Uint8Array(Buffer.from(hex, "hex"));
  const fprog = new ArrayBuffer(16); // struct sock_fprog: unsigned short len; (padding); struct sock_filter *filter
  const fview = new DataView(fprog);
  fview.setUint16(0, filter.length / 8, true);
  fview.setBigUint64(8, BigInt(ptr(filter)), true);
  if (sys(syscalls()!.seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, ptr(new Uint8Array(fprog))) < 0) throw new Error(`seccomp(SET_MODE_FILTER) failed: ${lastError().text}`);
  void filter;
}
