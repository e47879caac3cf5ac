/**
 * How to start this same program again as a plugin host: the compiled binary runs itself with
 * `__host`; from source, Bun runs the CLI's entry file (SPEC §2).
 */
import { fileURLToPath } from "node:url";

export function isCompiled(): boolean {
  return import.meta.url.includes("$bunfs") || Bun.main.startsWith("/$bunfs/");
}

export function hostCommand(): string[] {
  if (isCompiled()) return [process.execPath, "__host"];
  const entry = fileURLToPath(new URL("../cli/main.ts", import.meta.url));
  const bunfig = fileURLToPath(new URL("../../bunfig.toml", import.meta.url));
  // No .env or bunfig.toml from the user's project leaks into the plugin host.
  return [process.execPath, "--no-env-file", `--config=${bunfig}`, entry, "__host"];
}
