/**
 * Bun's runtime transpiler cache for sandboxed hosts run from a checkout (issue 39 point 9). A host
 * started from source transpiles cxagent's own TypeScript at each start unless Bun's cache holds
 * it; the user's cache (~/.bun/install/cache) holds the transpiled text of whatever else the user
 * ran with Bun, so a confined host is not given it, and paid about 10 ms per start transpiling.
 *
 * Instead: a cache of cxagent's own, in the hosts' private folder, that only this (unconfined)
 * process writes, by starting the host command once with nothing to load (it imports its modules
 * and stops); confined hosts may read it and never write it, so no plugin can plant code in
 * another's host. It is made again when the host's sources or Bun change (the stamp), and not at
 * all in the compiled binary, which carries its code compiled.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkoutRoot } from "./runtime-files.ts";

/** The environment variable that points Bun at its runtime transpiler cache. */
export const TRANSPILER_CACHE_ENV = "BUN_RUNTIME_TRANSPILER_CACHE_PATH";

const made = new Map<string, string | null>();

/** The cache folder a host started by `command` (a checkout's `... __host`) may read, made if need be; null where none is used. */
export function transpilerCache(privateFolder: string, command: readonly string[]): string | null {
  const at = command.indexOf("__host");
  const checkout = checkoutRoot();
  if (at < 0 || checkout === null) return null;
  const starter = command.slice(0, at + 1);
  const key = `${privateFolder}\0${starter.join("\0")}`;
  if (made.has(key)) return made.get(key)!;
  const folder = join(privateFolder, "transpiled");
  let result: string | null = folder;
  try {
    const stamp = join(folder, `stamp-${stampOf(checkout, starter)}`);
    if (!existsSync(stamp)) {
      // Made afresh (what an older source left goes), in the private folder, which must be there already.
      rmSync(folder, { recursive: true, force: true });
      mkdirSync(folder, { mode: 0o700 });
      const warm = Bun.spawnSync([...starter], { env: { ...process.env, [TRANSPILER_CACHE_ENV]: folder }, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
      // The host refuses to run without a library (exit 1) once its modules are loaded, which is all this needs.
      if (warm.exitCode === 1) writeFileSync(stamp, "");
      else result = null;
    }
  } catch {
    result = null; // the hosts transpile for themselves, as they would without it
  }
  made.set(key, result);
  return result;
}

/** What the cache depends on: Bun's version, the host's command, and when its sources last changed. */
function stampOf(checkout: string, starter: readonly string[]): string {
  let newest = 0;
  for (const part of ["src", "src/plugin-host", "src/protocol", "src/kinds"]) {
    const dir = join(checkout, part);
    for (const name of readdirSync(dir)) if (name.endsWith(".ts")) newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
  }
  return new Bun.CryptoHasher("sha256").update(`${Bun.version}\0${Bun.revision}\0${starter.join("\0")}\0${newest}`).digest("hex").slice(0, 32);
}
