/**
 * Where the native sandbox launcher is (ffi/launcher/sandbox-launcher.c: a static, libc-free
 * program of a few KiB that carries out the plan's words and execve's the host; issue 39 point 9:
 * a second Bun start per confined host cost about 20 ms, this costs about 1).
 *
 * - From a checkout: ffi/build/cxagent-sandbox.bin, which scripts/build-native.ts builds, when it
 *   is no older than its source.
 * - The compiled binary carries it (_launcher-embedded.ts) and writes it out, once, into the
 *   private folder the hosts' ${tmp} folders are made in (0700, this user's: the session checked
 *   it), named by its hash; one found there with other bytes was swapped, and is refused.
 * - An installed package ships no build, and a private folder mounted noexec cannot run it: null,
 *   and `cxagent __sandbox` carries the plan out itself.
 *
 * CXAGENT_SANDBOX_LAUNCHER=bun chooses that last way everywhere (the tests of it).
 */
import { chmodSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../errors.ts";
import { SANDBOX_REFUSED_EXIT } from "../protocol/sandbox-policy.ts";

const BUILT = new URL("../../ffi/build/cxagent-sandbox.bin", import.meta.url).pathname;
const SOURCE = new URL("../../ffi/launcher/sandbox-launcher.c", import.meta.url).pathname;

function isCompiled(): boolean {
  return import.meta.url.includes("$bunfs") || Bun.main.startsWith("/$bunfs/");
}

let checkout: string | null | undefined;
let carried: { bytes: Buffer; hash: string } | undefined;

/**
 * The native launcher's path, or null where there is none; `privateFolder`: where the compiled
 * binary writes it out. Its bytes there are checked at every call (15 KiB: some 30 µs), so one
 * swapped between two loads is refused too.
 */
export function nativeLauncher(privateFolder: string): string | null {
  if (process.env.CXAGENT_SANDBOX_LAUNCHER === "bun") return null;
  if (!isCompiled()) return (checkout ??= fresh());
  const path = writeOut(privateFolder);
  return runs(path) ? path : null;
}

const probed = new Map<string, boolean>();

/**
 * Whether the launcher written out can run there, tried once per process (about 1 ms): a folder on
 * a file system mounted noexec cannot run it, and then `cxagent __sandbox` does its work instead.
 * Asked for no host, it refuses (exit 78) having done nothing.
 */
function runs(path: string): boolean {
  let ok = probed.get(path);
  if (ok === undefined) {
    try {
      ok = Bun.spawnSync([path], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exitCode === SANDBOX_REFUSED_EXIT;
    } catch {
      ok = false;
    }
    probed.set(path, ok);
  }
  return ok;
}

function fresh(): string | null {
  try {
    const built = statSync(BUILT).mtimeMs;
    try {
      return built >= statSync(SOURCE).mtimeMs ? BUILT : null;
    } catch {
      return BUILT; // no source beside it: what was built is all there is
    }
  } catch {
    return null;
  }
}

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

function writeOut(folder: string): string {
  carried ??= (() => {
    const bytes = readFileSync((require("./_launcher-embedded.ts") as { default: string }).default);
    return { bytes, hash: sha256(bytes) };
  })();
  const { bytes, hash } = carried;
  const path = join(folder, `sandbox-launcher-${hash.slice(0, 32)}`);
  let there: Buffer | null = null;
  try {
    there = readFileSync(path);
  } catch {
    // not written yet
  }
  if (there !== null) {
    if (sha256(there) === hash) return path;
    throw new CxError("E_SANDBOX", `the sandbox launcher ${path} is not the one this cxagent carries (its bytes were changed): refusing to start a plugin host through it`, {
      hint: `remove ${path}; cxagent writes it out again`,
      details: { layer: "launcher", path },
    });
  }
  // Written whole under another name, then renamed: no host ever starts a half-written launcher.
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, bytes, { mode: 0o500 });
  chmodSync(partial, 0o500);
  renameSync(partial, path);
  return path;
}
