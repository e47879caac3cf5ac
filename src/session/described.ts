/**
 * What a plugin without a sidecar (a Cortex one) described at its last first start, kept so that
 * `cxagent mcp` lists its tools without running it (issue 42 point 2), as it lists a sidecar's.
 * One file per key, `<state>/described/<key>.json`: the key is the SHA-256 of the load set's hash,
 * the settings it was started with and this cxagent's version, so new bytes, other settings or
 * another cxagent never read an entry made for different ones. The file is a cache: one that is
 * missing, unreadable or not a manifest is no entry (the plugin is then loaded at once, as before,
 * and its describe writes the entry again); a write that fails costs only the next start's speed.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import { writeJsonAtomic } from "../files.ts";
import { type Manifest, ManifestSchema } from "../protocol/manifest.ts";

const FOLDER = "described";

export function describedKey(loadSetHash: string, settings: unknown, version: string = pkg.version): string {
  return createHash("sha256").update(JSON.stringify([loadSetHash, settings ?? {}, version])).digest("hex");
}

export function readDescribed(stateDir: string, key: string): Manifest | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(join(stateDir, FOLDER, `${key}.json`), "utf8"));
  } catch {
    return null;
  }
  const result = v.safeParse(ManifestSchema, parsed);
  return result.success ? result.output : null;
}

export function writeDescribed(stateDir: string, key: string, manifest: Manifest): void {
  try {
    writeJsonAtomic(join(stateDir, FOLDER, `${key}.json`), manifest);
  } catch {
    // a cache: the next start describes again
  }
}
