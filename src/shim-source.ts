/**
 * The shim's source is ffi/shim/*.c, one file per section, joined in name order into one
 * translation unit: by scripts/build-native.ts into ffi/build/cxagent_shim.c (built and embedded in
 * the binary), and by the plugin host itself when it compiles the shim with TinyCC from a checkout.
 * Each part keeps its own name and line numbers in compiler messages (#line).
 *
 * Run from a checkout, the parent looks here whether the built shim is newer than every part
 * and, if so, tells the host to load it (host-command.ts); otherwise the host looks itself.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export const SHIM_PARTS_DIR = new URL("../ffi/shim/", import.meta.url).pathname;
/** The shim scripts/build-native.ts builds (and the compiled binary embeds). */
export const SHIM_BUILT = new URL("../ffi/build/cxagent_shim.so", import.meta.url).pathname;

export function shimParts(dir = SHIM_PARTS_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".c"))
    .sort()
    .map((f) => join(dir, f));
}

export function joinShim(dir = SHIM_PARTS_DIR): string {
  return shimParts(dir)
    .map((path) => `#line 1 "ffi/shim/${path.slice(path.lastIndexOf("/") + 1)}"\n${readFileSync(path, "utf8")}`)
    .join("\n");
}

/** When the newest part was changed (ms since the epoch). */
export function newestPart(dir = SHIM_PARTS_DIR): number {
  return Math.max(...shimParts(dir).map((p) => statSync(p).mtimeMs));
}

/** Whether the built shim exists and is no older than any part of its source. */
export function builtShimIsFresh(built = SHIM_BUILT, dir = SHIM_PARTS_DIR): boolean {
  try {
    return statSync(built).mtimeMs >= newestPart(dir);
  } catch {
    return false;
  }
}
