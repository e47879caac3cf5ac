/**
 * Which ABI a plugin library speaks, decided before any of its code runs, from its dynamic symbol
 * table (elf/elf.ts), never by loading it: a library that exports `cortex_plugin_init` and none
 * of the `cxagent_plugin_*` functions is a Cortex native plugin; any other is a cxagent plugin
 * (whose missing exports its plugin host names, if it lacks any). A file that cannot be read as
 * ELF is left to the steps that refuse it with a reason.
 */
import { closeSync, openSync } from "node:fs";
import type { PluginKind } from "../protocol/host-args.ts";
import { ElfError, fileSource, looksLikeElf, readExports } from "../elf/elf.ts";

export const CORTEX_ENTRY = "cortex_plugin_init";

/** Whether a library with these exports is a Cortex native plugin. */
export function isCortexExports(exports: readonly string[]): boolean {
  return exports.includes(CORTEX_ENTRY) && !exports.some((name) => name.startsWith("cxagent_plugin_"));
}

export function kindOfExports(exports: readonly string[]): PluginKind {
  return isCortexExports(exports) ? "cortex" : "native";
}

/** Whether a library is a Cortex native plugin, from its bytes (the hashed ones, when loading). */
export function isCortexLibrary(bytes: Uint8Array): boolean {
  if (!looksLikeElf(bytes)) return false;
  try {
    return isCortexExports(readExports(bytes));
  } catch (error) {
    if (error instanceof ElfError) return false;
    throw error;
  }
}

/** The kind of a library, from its bytes. */
export function kindOfBytes(bytes: Uint8Array): PluginKind {
  return isCortexLibrary(bytes) ? "cortex" : "native";
}

/** Whether a library file, read where it lies (a few positioned reads, not the whole file), is a Cortex native plugin. */
export function isCortexFile(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return false;
  }
  try {
    const source = fileSource(fd);
    if (!looksLikeElf(source.read(0, Math.min(4, source.size)))) return false;
    return isCortexExports(readExports(source));
  } catch {
    return false; // unreadable here: the load reads it again and says why
  } finally {
    closeSync(fd);
  }
}
