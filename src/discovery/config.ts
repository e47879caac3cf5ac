/**
 * config.json (SPEC §6.2): where to look for plugins, and per plugin its file, whether it is
 * enabled and its settings. Validated strictly; every problem reported with its path at once.
 */
import { join } from "node:path";
import * as v from "valibot";
import { readJsonStrict } from "../files.ts";
import { isCxError, CxError } from "../errors.ts";

export const PluginConfigSchema = v.strictObject({
  file: v.pipe(v.string(), v.check((f) => f.trim() !== "" && !f.includes("/") && !f.includes("\\"), "must be a file name, without a folder")),
  enabled: v.optional(v.boolean(), true),
  settings: v.optional(v.unknown()),
});
export type PluginConfig = v.InferOutput<typeof PluginConfigSchema>;

export const ConfigSchema = v.strictObject({
  pluginPaths: v.optional(v.array(v.string()), () => []),
  plugins: v.optional(v.record(v.string(), PluginConfigSchema), () => ({})),
});
export type Config = v.InferOutput<typeof ConfigSchema>;

export const EMPTY_CONFIG: Config = { pluginPaths: [], plugins: {} };

export function configPath(configDir: string): string {
  return join(configDir, "config.json");
}

/** Reads config.json; a missing file is an empty config. */
export function readConfig(configDir: string): Config {
  const path = configPath(configDir);
  try {
    return readJsonStrict(path, ConfigSchema, EMPTY_CONFIG, "config file");
  } catch (error) {
    // The user's own file: its problems are invalid input (exit 3), not corrupt state.
    if (isCxError(error, "E_STATE")) {
      throw new CxError("E_CONFIG", error.message.replace("is corrupt: ", "is invalid: "), {
        hint: `fix ${path}; see README.md for its shape`,
        details: error.details,
      });
    }
    throw error;
  }
}
