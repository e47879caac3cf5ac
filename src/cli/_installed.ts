/**
 * Where `cxagent install` puts plugins: <config>/plugins/<name>/, the folder discovery searches
 * last (after config.json's pluginPaths and the project's .cxagent/plugins).
 */
import { join } from "node:path";

export function pluginsFolder(configDir: string): string {
  return join(configDir, "plugins");
}

export function installedFolder(configDir: string, name: string): string {
  return join(pluginsFolder(configDir), name);
}
