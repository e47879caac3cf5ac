/**
 * Every plugin a session could load: the ones config.json names, then the ones discovery finds,
 * each with its sidecar read (no plugin code runs). Used by `list` and `instructions`.
 */
import { isCxError } from "../errors.ts";
import type { Manifest } from "../protocol/manifest.ts";
import type { Config } from "./config.ts";
import { discoverAll, findFile, type SearchFolder } from "./discover.ts";
import type { PluginLocation } from "./resolve.ts";
import { readSidecar } from "./sidecar.ts";

export interface CatalogEntry {
  name: string;
  configured: boolean;
  enabled: boolean;
  location: PluginLocation | null;
  manifest: Manifest | null;
  /** Why the plugin cannot be loaded as it is (missing file, bad sidecar). */
  problem: string | null;
}

export function catalog(config: Config, folders: SearchFolder[]): CatalogEntry[] {
  const entries: CatalogEntry[] = [];
  const withSidecar = (name: string, location: PluginLocation | null, configured: boolean, enabled: boolean, missing: string | null): CatalogEntry => {
    if (!location) return { name, configured, enabled, location, manifest: null, problem: missing };
    try {
      return { name, configured, enabled, location, manifest: readSidecar(location.sidecar, location.library), problem: null };
    } catch (error) {
      return { name, configured, enabled, location, manifest: null, problem: isCxError(error) ? error.message : String(error) };
    }
  };
  for (const [name, entry] of Object.entries(config.plugins)) {
    const location = findFile(entry.file, folders);
    entries.push(withSidecar(name, location, true, entry.enabled, `its file '${entry.file}' is in none of the plugin folders`));
  }
  for (const found of discoverAll(folders).found) {
    if (entries.some((e) => e.location?.library === found.library)) continue;
    const preview = withSidecar(found.name, found, false, true, null);
    const name = preview.manifest?.name ?? found.name;
    const configuredEntry = config.plugins[name];
    if (configuredEntry && entries.some((e) => e.name === name)) continue;
    entries.push({ ...preview, name, enabled: configuredEntry?.enabled ?? true });
  }
  return entries;
}
