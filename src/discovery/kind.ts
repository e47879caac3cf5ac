/**
 * Which ABI a plugin library speaks, decided before any of its code runs, from its dynamic symbol
 * table (trust/elf.ts), never by loading it: a library that exports `cortex_plugin_init` and none
 * of the `cxagent_plugin_*` functions is a Cortex native plugin; any other is a cxagent plugin
 * (whose missing exports its plugin host names, if it lacks any). A file that cannot be read as
 * ELF is left to the steps that refuse it with a reason.
 */
import { closeSync, openSync } from "node:fs";
import type { PluginKind } from "../protocol/host-args.ts";
import { ElfError, fileSource, looksLikeElf, readExports } from "../trust/elf.ts";

export const CORTEX_ENTRY = "cortex_plugin_init";

export function kindOfExports(exports: readonly string[]): PluginKind {
  return exports.includes(CORTEX_ENTRY) && !exports.some((name) => name.startsWith("cxagent_plugin_")) ? "cortex" : "native";
}

/** The kind of a library, from its bytes (the hashed ones, when loading). */
export function kindOfBytes(bytes: Uint8Array): PluginKind {
  if (!looksLikeElf(bytes)) return "native";
  try {
    return kindOfExports(readExports(bytes));
  } catch (error) {
    if (error instanceof ElfError) return "native";
    throw error;
  }
}

/** The kind of a library file, read where it lies (a few positioned reads, not the whole file). */
export function kindOfFile(path: string): PluginKind {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return "native";
  }
  try {
    const source = fileSource(fd);
    if (!looksLikeElf(source.read(0, Math.min(4, source.size)))) return "native";
    return kindOfExports(readExports(source));
  } catch {
    return "native"; // unreadable here: the load reads it again and says why
  } finally {
    closeSync(fd);
  }
}
