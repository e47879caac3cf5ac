/**
 * The sandbox's seccomp program (src/sandbox/seccomp.ts), run here by a classic BPF interpreter
 * over every system call number on each architecture the sandbox knows, the other architectures
 * and x86_64's x32 numbers, and compared with the rule the issue states (39 point 3), written out
 * here on its own: a name removed from the filter, a jump that lands wrong or an argument read
 * from the wrong place answers differently for some number and fails. The same program run by
 * the kernel: test/integration/sandbox-seccomp.test.ts.
 */
import { expect, test } from "bun:test";
import { SYSCALLS, type Syscalls } from "../../src/sandbox/kernel.ts";
import { filterHex, filterProgram } from "../../src/sandbox/seccomp.ts";

const ALLOW = 0x7fff0000, KILL_PROCESS = 0x80000000, ERRNO = 0x00050000;
const EPERM = 1, ENOSYS = 38;
const X32_BIT = 0x40000000;
const AUDIT_ARCH_I386 = 0x40000003, AUDIT_ARCH_ARM = 0x40000028;

/** Runs a classic BPF program over struct seccomp_data {nr, arch, ip, args[6]}; throws on an instruction seccomp would not run. */
function runFilter(program: readonly (readonly [number, number, number, number])[], nr: number, arch: number, args: readonly number[] = [], loads: number[] = []): number {
  const data = new DataView(new ArrayBuffer(64));
  data.setUint32(0, nr >>> 0, true);
  data.setUint32(4, arch >>> 0, true);
  args.forEach((a, i) => data.setBigUint64(16 + 8 * i, BigInt.asUintN(64, BigInt(a)), true));
  let acc = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const [code, jt, jf, k] = program[pc]!;
    if (code === 0x20) {
      if (k % 4 !== 0 || k > 60) throw new Error(`a load at ${k}, outside struct seccomp_data`);
      loads.push(k);
      acc = data.getUint32(k, true);
    } else if (code === 0x06) return k >>> 0;
    else if (code === 0x05) pc += k;
    else if (code === 0x15) pc += acc === k >>> 0 ? jt : jf;
    else if (code === 0x25) pc += acc > k >>> 0 ? jt : jf;
    else if (code === 0x35) pc += acc >= k >>> 0 ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else throw new Error(`instruction ${code.toString(16)} at ${pc}: not one this interpreter knows`);
  }
  throw new Error("the program ran off its end (the kernel refuses such a program)");
}

/** The names whose calls fail with EPERM: what reaches past the plugin's own process (issue 39 point 3). */
const DENIED = [
  "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "mount", "umount2", "kexec_load", "kexec_file_load",
  "unshare", "setns", "pivot_root", "chroot", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
  "reboot", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "open_tree",
  "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "io_uring_setup", "io_uring_enter",
  "io_uring_register",
] as const;
const CLONE_NEW = { NS: 0x20000, CGROUP: 0x2000000, UTS: 0x4000000, IPC: 0x8000000, USER: 0x10000000, PID: 0x20000000, NET: 0x40000000 };
const AF_UNIX = 1, AF_INET = 2, AF_INET6 = 10, AF_NETLINK = 16, AF_PACKET = 17;

/** The rule, stated on its own: what the filter must answer. */
function expected(nr: Syscalls, unixOnly: boolean, call: number, arch: number, args: readonly number[]): number {
  if (arch !== nr.auditArch) return KILL_PROCESS;
  if (nr === SYSCALLS.x64 && call >= X32_BIT) return ERRNO | ENOSYS; // x32's numbers: this sandbox was built for x86_64's
  if (DENIED.some((name) => nr[name] === call)) return ERRNO | EPERM;
  if (call === nr.clone3) return ERRNO | ENOSYS;
  if (call === nr.clone) return Object.values(CLONE_NEW).some((flag) => (args[0]! & flag) !== 0) ? ERRNO | EPERM : ALLOW;
  if (unixOnly && (call === nr.socket || call === nr.socketpair)) return (args[0]! >>> 0) === AF_UNIX ? ALLOW : ERRNO | EPERM;
  return ALLOW;
}

const ARCHES = [SYSCALLS.x64.auditArch, SYSCALLS.arm64.auditArch, AUDIT_ARCH_I386, AUDIT_ARCH_ARM];
const NUMBERS = [...Array.from({ length: 1024 }, (_, i) => i), ...Array.from({ length: 1024 }, (_, i) => X32_BIT + i), 0x3fffffff, 0x7fffffff, 0x80000000, 0xffffffff];
const ARGUMENTS: number[][] = [
  [0],
  [AF_UNIX],
  [AF_INET],
  [AF_INET6],
  [AF_NETLINK],
  [AF_PACKET],
  [AF_UNIX + 2 ** 32], // the high half of a 64-bit argument is not the family
  [0x11], // SIGCHLD: a plain fork
  [0x3d0f00], // the C library's thread flags
  ...Object.values(CLONE_NEW).map((flag) => [flag | 0x11]),
];

for (const [name, nr] of Object.entries(SYSCALLS)) {
  for (const unixOnly of [true, false]) {
    test(`${name}, ${unixOnly ? 'net "none"' : "network declared"}: the filter answers as the rule says for every call number, architecture and argument tried`, () => {
      const program = filterProgram(nr, unixOnly);
      const wrong: string[] = [];
      for (const arch of ARCHES) {
        for (const call of NUMBERS) {
          for (const args of ARGUMENTS) {
            const got = runFilter(program, call, arch, args);
            const want = expected(nr, unixOnly, call, arch, args);
            if (got !== want && wrong.length < 20) wrong.push(`nr ${call} arch ${arch.toString(16)} arg0 ${args[0]!.toString(16)}: ${got.toString(16)}, not ${want.toString(16)}`);
          }
        }
      }
      expect(wrong).toEqual([]);
    });
  }
}

test("the calls a warm plugin host makes on every call are allowed without reading their arguments, so the kernel's action cache answers them", () => {
  // The kernel caches "always allowed" for a call number when the program, run with that number
  // and this architecture, reaches ALLOW having loaded nothing but the number and the architecture
  // (kernel/seccomp.c, seccomp_is_const_allow): such a call never runs the program.
  const hot = { x64: [0, 1, 7, 202, 232, 281, 271, 228, 39], arm64: [63, 64, 98, 22, 73, 113, 172] }; // read write (poll) futex epoll_* ppoll clock_gettime getpid
  for (const [name, nr] of Object.entries(SYSCALLS)) {
    for (const unixOnly of [true, false]) {
      for (const call of hot[name as keyof typeof hot]) {
        const loads: number[] = [];
        expect(runFilter(filterProgram(nr, unixOnly), call, nr.auditArch, [], loads)).toBe(ALLOW);
        expect(loads.filter((offset) => offset !== 0 && offset !== 4)).toEqual([]);
      }
    }
  }
});

test("the filter is written for the kernel as struct sock_filter[]: 8 bytes per instruction, little-endian", () => {
  const program = filterProgram(SYSCALLS.x64, true);
  const bytes = Buffer.from(filterHex(SYSCALLS.x64, true), "hex");
  expect(bytes.length).toBe(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    expect([bytes.readUInt16LE(i * 8), bytes[i * 8 + 2], bytes[i * 8 + 3], bytes.readUInt32LE(i * 8 + 4)]).toEqual([code, jt, jf, k >>> 0]);
  });
});
