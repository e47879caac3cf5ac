/**
 * Every plugin a session could load: the ones config.json names, then the ones discovery finds
 * (no plugin code runs). A discovered plugin with the name of a config entry that means another
 * folder is listed too — as the shadow it is. Used by `list` and `instructions`.
 */
import { isCxError } from "../errors.ts";
import type { Config } from "./config.ts";
import type { PluginConfig } from "./config.ts";
import { configuredLocation, discoverAll, findFile, pinnedFolder, type Resolved, type SearchFolder } from "./discover.ts";
import { readSidecar } from "./sidecar.ts";
import { profileOf } from "../kinds/index.ts";

export interface CatalogEntry {
  name: string;
  configured: boolean;
  location: Resolved | null;
  /** Why it cannot be found (a configured file that is nowhere). */
  problem: string | null;
  /** Folders of same-named plugins later in the search order, which discovery by name never reaches. */
  shadows: string[];
}

export function catalog(config: Config, folders: SearchFolder[], projectDir: string): CatalogEntry[] {
  const entries: CatalogEntry[] = [];
  for (const [name, entry] of config.plugins) {
    const location = configuredLocation(entry, folders, projectDir, name);
    entries.push({
      name,
      configured: true,
      location: location && { ...location, configName: name, how: "config" },
      problem: location ? null : nowhere(name, entry, folders, projectDir),
      shadows: [],
    });
  }
  const { found, shadowed } = discoverAll(folders);
  for (const location of found) {
    if (entries.some((e) => e.location?.library === location.library)) continue;
    let name = location.name;
    try {
      // Named by its manifest: a sidecar's name, read here; a Cortex plugin's manifest.toml, read by discovery.
      if (profileOf(location.kind).sidecar) name = readSidecar(location.sidecar, location.library).name;
    } catch (error) {
      if (!isCxError(error)) throw error; // its problem is shown when it is inspected
    }
    entries.push({
      name,
      configured: false,
      location: { ...location, configName: null, how: "discovery" },
      problem: null,
      shadows: shadowed.filter((s) => s.name === location.name).map((s) => s.folder),
    });
  }
  return entries;
}

function nowhere(name: string, entry: PluginConfig, folders: SearchFolder[], projectDir: string): string {
  const pinned = pinnedFolder(entry, projectDir);
  if (pinned !== null) return `its file '${entry.file}' is not in its pinned folder ${pinned}`;
  const inProject = findFile(entry.file, folders.filter((f) => f.origin === "project"), name);
  return `its file '${entry.file}' is in none of the plugin folders${inProject ? ` (the project's ${inProject.library} is not used for a config entry without "path")` : ""}`;
}
