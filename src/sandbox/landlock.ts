/**
 * A Landlock ruleset for one plugin host (Linux ≥ 5.13; TCP ports from ABI 4, scoping from ABI 6):
 * every file right the kernel knows is handled, so what no rule allows is denied. Written here as
 * the launcher's plan words (launch-plan.ts), which the native launcher (or, without it, the
 * calls below) applies to the calling thread only (landlock_restrict_self), which then execve's
 * the host: the new image inherits the domain, with none of the threads a runtime started before.
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
  /** Path → rights (ACCESS values or'ed). A path that does not exist is skipped when applied. */
  paths: Map<string, bigint>;
  /** null: TCP is not handled (net "any"); else the ports allowed. */
  tcp: { connect: number[]; bind: number[] } | null;
}

/**
 * The plan's words for the ruleset (the launcher's `landlock`, `path`, `port` and `restrict`):
 * the rights handled, each rule's rights within them, and the rights a rule on a non-folder keeps.
 */
export function landlockWords(abi: number, rules: LandlockRules): string[] {
  const handled = handledFs(abi);
  const net = rules.tcp !== null && abi >= 4;
  const words = ["landlock", String(handled), String(net ? NET.BIND_TCP | NET.CONNECT_TCP : 0n), String(abi >= 6 ? SCOPE.ABSTRACT_UNIX_SOCKET | SCOPE.SIGNAL : 0n), String(FILE_RIGHTS & handled)];
  for (const [path, wanted] of rules.paths) words.push("path", String(wanted & handled), path);
  if (net) {
    for (const p of rules.tcp!.connect) words.push("port", String(NET.CONNECT_TCP), String(p));
    for (const p of rules.tcp!.bind) words.push("port", String(NET.BIND_TCP), String(p));
  }
  words.push("restrict");
  return words;
}

/* The calls that apply those words from a running Bun, where no native launcher is at hand (launch.ts). Each throws naming the step. */

export function createRuleset(fs: bigint, net: bigint, scoped: bigint): number {
  const attr = new BigUint64Array([fs, net, scoped]);
  const ruleset = sys(syscalls()!.landlock_create_ruleset, ptr(attr), scoped ? 24 : net ? 16 : 8, 0);
  if (ruleset < 0) throw new Error(`landlock_create_ruleset failed: ${lastError().text}`);
  return ruleset;
}

/** A rule for `path` (skipped when it does not exist); on anything but a folder, only `fileRights` of `rights`. */
export function addPathRule(ruleset: number, rights: bigint, path: string, fileRights: bigint): void {
  const kind = statKind(path);
  if (kind === null) return;
  const fd = libc().open(ptr(cString(path)), O_PATH | O_CLOEXEC, 0);
  if (fd < 0) return;
  const beneath = new DataView(new ArrayBuffer(12)); // struct landlock_path_beneath_attr, packed
  beneath.setBigUint64(0, kind === "dir" ? rights : rights & fileRights, true);
  beneath.setInt32(8, fd, true);
  const added = sys(syscalls()!.landlock_add_rule, ruleset, 1 /* PATH_BENEATH */, ptr(new Uint8Array(beneath.buffer)), 0);
  const error = added < 0 ? lastError().text : null;
  libc().close(fd);
  if (error !== null) throw new Error(`landlock_add_rule for ${path} failed: ${error}`);
}

export function addPortRule(ruleset: number, right: bigint, port: number): void {
  const attr = new BigUint64Array([right, BigInt(port)]); // struct landlock_net_port_attr
  if (sys(syscalls()!.landlock_add_rule, ruleset, 2 /* NET_PORT */, ptr(attr), 0) < 0) throw new Error(`landlock_add_rule for TCP port ${port} failed: ${lastError().text}`);
}

export function restrictSelf(ruleset: number): void {
  const failed = sys(syscalls()!.landlock_restrict_self, ruleset, 0) < 0 ? lastError().text : null;
  libc().close(ruleset);
  if (failed !== null) throw new Error(`landlock_restrict_self failed: ${failed}`);
}
