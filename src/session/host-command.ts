/**
 * How to start this same program again as a plugin host (SPEC §2): the compiled binary runs itself
 * with `__host`; from source, Bun runs the executable's entry file, src/main.ts. The session hands
 * this command to the runtime, which never looks for an entry point itself.
 */
import { join } from "node:path";
import { SHIM_OPTION } from "../protocol/host-args.ts";
import { builtShimIsFresh, SHIM_BUILT } from "../shim-source.ts";

export function isCompiled(): boolean {
  return import.meta.url.includes("$bunfs") || Bun.main.startsWith("/$bunfs/");
}

export function hostCommand(): string[] {
  if (isCompiled()) return [process.execPath, "__host"];
  // import.meta.dir, not node:url: loading that module cost a prepared host's start about 0.5 ms.
  const entry = join(import.meta.dir, "../main.ts");
  const bunfig = join(import.meta.dir, "../../bunfig.toml");
  // No .env or bunfig.toml from the user's project leaks into the plugin host, and a module
  // plugin's import of a package it lacks is never fetched from a registry (auto-install).
  const command = [process.execPath, "--no-env-file", `--config=${bunfig}`, "--no-install", entry, "__host"];
  // The host would look itself, and loading node:fs to do so cost it about 2 ms of its start-up.
  return builtShimIsFresh() ? [...command, `${SHIM_OPTION}${SHIM_BUILT}`] : command;
}
