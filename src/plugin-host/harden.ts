/**
 * What the plugin host gives up before any plugin byte runs, so plugin code cannot reach the
 * descriptors of the parent or of another plugin's host (pidfd_getfd, /proc/<pid>/fd/N), which
 * would let it write requests into another plugin past every permission decision (SPEC §8):
 *
 * - PR_SET_DUMPABLE 0: only a process holding CAP_SYS_PTRACE may open this one's descriptors.
 *   The parent makes itself non-dumpable too (host/nondumpable.ts).
 * - CAP_SYS_PTRACE, which root holds and which overrides exactly that check: dropped from the
 *   bounding set first (so no program the plugin runs, setuid or not, can get it back), then from
 *   the ambient, effective, permitted and inheritable sets.
 *
 * Capabilities belong to a thread: the drop applies to the main thread, and so to every thread
 * the shim and the plugin create from it, and every process they start. Threads Bun started
 * before this point keep what they had; plugin code that took one of them over could use it.
 * That, and root's many other powers, is why this narrows what a plugin running as root can do
 * rather than containing it; for an ordinary user, non-dumpable is the whole protection.
 */
import type { Libc } from "./libc.ts";

const PR_GET_DUMPABLE = 3;
const PR_SET_DUMPABLE = 4;
const PR_CAPBSET_READ = 23;
const PR_CAPBSET_DROP = 24;
const PR_CAP_AMBIENT = 47;
const PR_CAP_AMBIENT_LOWER = 3;
const CAP_SETPCAP = 8;
const CAP_SYS_PTRACE = 19;
const LINUX_CAPABILITY_VERSION_3 = 0x20080522;

/** The capability sets /proc shows for this thread, as bit masks. */
function capabilities(libc: Libc): Record<"CapInh" | "CapPrm" | "CapEff" | "CapBnd" | "CapAmb", bigint> {
  const status = libc.readText("/proc/thread-self/status");
  if (status === null) throw new Error("/proc/thread-self/status could not be read");
  const read = (name: string) => BigInt(`0x${new RegExp(`^${name}:\\s*([0-9a-f]+)$`, "m").exec(status)?.[1] ?? "0"}`);
  return { CapInh: read("CapInh"), CapPrm: read("CapPrm"), CapEff: read("CapEff"), CapBnd: read("CapBnd"), CapAmb: read("CapAmb") };
}

/** Does the above; returns what could not be done (then the host must not load the plugin), or null. */
export function harden(libc: Libc): string | null {
  if (process.platform !== "linux") return null;
  try {
    return dropAndCheck(libc);
  } catch (error) {
    return `it could not give up CAP_SYS_PTRACE or make itself non-dumpable: ${String(error)}`;
  }
}

function dropAndCheck(libc: Libc): string | null {
  const ptrace = 1n << BigInt(CAP_SYS_PTRACE);
  const before = capabilities(libc);
  const couldDropBounding = (before.CapEff & (1n << BigInt(CAP_SETPCAP))) !== 0n;
  if (libc.prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE) === 1) libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE);
  libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE);
  if ((before.CapEff | before.CapPrm | before.CapInh) & ptrace) {
    const header = new Uint32Array([LINUX_CAPABILITY_VERSION_3, 0]);
    const data = new Uint32Array(6); // { effective, permitted, inheritable } × (bits 0-31, 32-63)
    if (libc.capget(header, data) === 0) {
      const keep = ~(1 << CAP_SYS_PTRACE);
      for (const i of [0, 1, 2]) data[i] = data[i]! & keep;
      libc.capset(header, data);
    }
  }
  libc.prctl(PR_SET_DUMPABLE, 0);
  const after = capabilities(libc);
  if ((after.CapEff | after.CapPrm | after.CapInh | after.CapAmb) & ptrace) return "it could not drop CAP_SYS_PTRACE";
  if (couldDropBounding && after.CapBnd & ptrace) return "it could not drop CAP_SYS_PTRACE from its bounding set";
  if (libc.prctl(PR_GET_DUMPABLE) !== 0) return "it could not make itself non-dumpable";
  return null;
}
