/**
 * A Landlock ruleset for one plugin host (Linux ≥ 5.13; TCP ports from ABI 4, scoping from ABI 6):
 * every file right the kernel knows is handled, so what no rule allows is denied. Applied to the
 * calling thread only (landlock_restrict_self), which then execve's the host: the new image
 * inherits the domain, with none of the threads the launcher's runtime started before.
 */
import { ptr } from "bun:ffi";
import { O_CLOEXEC, O_PATH, statKind } from "./paths.ts";
import { cString, lastError, libc, sys, syscalls } from "./kernel.ts";

const FS = {
  EXECUTE: 1n, WRITE_FILE: 2n, READ_FILE: 4n, READ_DIR: 8n, REMOVE_DIR: 16n, REMOVE_FILE: 32n,
  MAKE_CHAR: 64n, MAKE_DIR: 128n, MAKE_REG: 256n, MAKE_SOCK: 512n, MAKE_FIFO: 1024n, MAKE_BLOCK: 2048n,
  MAKE_SYM: 4096n, REFER: 8192n, TRUNCATE: 16384n, IOCTL_DEV: 32768n,
} as const;

/** The file rights each ABI handles (REFER from 2, TRUNCATE from 3, IOCTL_DEV from 5). */
function handledFs(abi: number): bigint {
  let rights = 0x1fffn;
  if (abi >= 2) rights |= FS.REFER;
  if (abi >= 3) rights |= FS.TRUNCATE;
  if (abi >= 5) rights |= FS.IOCTL_DEV;
  return rights;
}

/** Rights that apply to a file rather than a folder: a rule on a file may grant only these. */
const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV;

export const ACCESS = {
  read: FS.READ_FILE | FS.READ_DIR,
  execute: FS.EXECUTE | FS.READ_FILE | FS.READ_DIR,
  /** Everything but REFER (so a hard link or rename never moves a file across rules) and devices. */
  write: FS.READ_FILE | FS.READ_DIR | FS.WRITE_FILE | FS.REMOVE_DIR | FS.REMOVE_FILE | FS.MAKE_DIR | FS.MAKE_REG |
    FS.MAKE_SOCK | FS.MAKE_FIFO | FS.MAKE_SYM | FS.TRUNCATE,
  /** A folder's names only (no file in it, no folder under it, is read): where a package resolver looks. */
  list: FS.READ_DIR,
  /** /dev/null and its like: read, write, and their ioctls. */
  device: FS.READ_FILE | FS.WRITE_FILE | FS.IOCTL_DEV,
} as const;

const NET = { BIND_TCP: 1n, CONNECT_TCP: 2n } as const;
const SCOPE = { ABSTRACT_UNIX_SOCKET: 1n, SIGNAL: 2n } as const;

export interface LandlockRules {
  /** Path → rights (ACCESS values or'ed). A path that does not exist is skipped and reported. */
  paths: Map<string, bigint>;
  /** null: TCP is not handled (net "any"); else the ports allowed. */
  tcp: { connect: number[]; bind: number[] } | null;
}

export interface LandlockApplied {
  abi: number;
  skipped: string[];
  net: boolean;
}

/**
 * Builds the ruleset and restricts the calling thread. Throws naming the step that failed; the
 * caller (the launcher) refuses to start the host then. `no_new_privs` must be set already.
 */
export function restrictThread(abi: number, rules: LandlockRules): LandlockApplied {
  const nr = syscalls()!;
  const net = rules.tcp !== null && abi >= 4;
  const attr = new BigUint64Array([handledFs(abi), net ? NET.BIND_TCP | NET.CONNECT_TCP : 0n, abi >= 6 ? SCOPE.ABSTRACT_UNIX_SOCKET | SCOPE.SIGNAL : 0n]);
  const size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
  const ruleset = sys(nr.landlock_create_ruleset, ptr(attr), size, 0);
  if (ruleset < 0) throw new Error(`landlock_create_ruleset failed: ${lastError().text}`);
  const skipped: string[] = [];
  try {
    const beneath = new ArrayBuffer(12); // struct landlock_path_beneath_attr, packed
    const view = new DataView(beneath);
    for (const [path, wanted] of rules.paths) {
      const kind = statKind(path);
      if (kind === null) {
        skipped.push(path);
        continue;
      }
      const fd = libc().open(ptr(cString(path)), O_PATH | O_CLOEXEC, 0);
      if (fd < 0) {
        skipped.push(path);
        continue;
      }
      const allowed = (kind === "dir" ? wanted : wanted & FILE_RIGHTS) & handledFs(abi);
      view.setBigUint64(0, allowed, true);
      view.setInt32(8, fd, true);
      const added = sys(nr.landlock_add_rule, ruleset, 1 /* PATH_BENEATH */, ptr(new Uint8Array(beneath)), 0);
      const error = added < 0 ? lastError().text : null;
      libc().close(fd);
      if (error !== null) throw new Error(`landlock_add_rule for ${path} failed: ${error}`);
    }
    if (net) {
      const port = new BigUint64Array(2); // struct landlock_net_port_attr
      const add = (right: bigint, value: number) => {
        port[0] = right;
        port[1] = BigInt(value);
        if (sys(nr.landlock_add_rule, ruleset, 2 /* NET_PORT */, ptr(port), 0) < 0) throw new Error(`landlock_add_rule for TCP port ${value} failed: ${lastError().text}`);
      };
      for (const p of rules.tcp!.connect) add(NET.CONNECT_TCP, p);
      for (const p of rules.tcp!.bind) add(NET.BIND_TCP, p);
    }
    if (sys(nr.landlock_restrict_self, ruleset, 0) < 0) throw new Error(`landlock_restrict_self failed: ${lastError().text}`);
  } finally {
    libc().close(ruleset);
  }
  return { abi, skipped, net };
}
