import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { existsSync, readFileSync } from "node:fs";
import { configPath, isPlainObject, parseConfig } from "../../discovery/config.ts";
import { resolveFolders } from "../../discovery/paths.ts";
import { CxError } from "../../errors.ts";
import { writeJsonAtomic } from "../../files.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: commandMeta({
    name: "config",
    description: "Read or change config.json: get [KEY], set KEY VALUE, unset KEY (KEY: a dotted path; --plugin P: in plugins.P)",
    summary: "Read or change config.json (get, set, unset), checked before it is written",
  }),
  args: {
    action: { type: "positional", description: "get, set or unset", required: true },
    key: { type: "positional", description: "A dotted path: pluginPaths, or with --plugin: enabled, settings.precision, tools.deny, …", required: false },
    value: { type: "positional", description: "For set: JSON (true, 2, [\"a\"], {\"k\": 1}), else taken as a string", required: false },
    plugin: { type: "string", description: "The key is inside this plugin's entry (plugins.<name>; names may hold dots)", valueHint: "NAME" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const file = configPath(resolveFolders(options).configDir);
    const action = String(args.action);
    if (!["get", "set", "unset"].includes(action)) throw new CxError("E_USAGE", `config takes get, set or unset, not '${action}'`);
    const raw = readRaw(file);
    const path = [...(typeof args.plugin === "string" ? ["plugins", args.plugin] : []), ...(typeof args.key === "string" && args.key !== "" ? args.key.split(".") : [])];
    if (action === "get") {
      if (args.value !== undefined) throw new CxError("E_USAGE", "config get takes a key, not a value");
      const value = path.reduce<unknown>((at, key) => (isPlainObject(at) && Object.hasOwn(at, key) ? at[key] : undefined), raw);
      if (value === undefined) throw new CxError("E_NOT_FOUND", `${file} has no ${path.join(".") || "settings"}`, { hint: "config get without a key prints the whole file" });
      return { json: { file, key: path.join("."), value }, text: typeof value === "string" ? value : JSON.stringify(value, null, 2) };
    }
    if (path.length === 0) throw new CxError("E_USAGE", `config ${action} needs a key`);
    if (action === "set" && args.value === undefined) throw new CxError("E_USAGE", "config set needs a value");
    if (action === "unset" && args.value !== undefined) throw new CxError("E_USAGE", "config unset takes a key, not a value");
    const value = action === "set" ? parseValue(String(args.value)) : undefined;
    const next = structuredClone(raw);
    let at: Record<string, unknown> = next;
    for (const key of path.slice(0, -1)) {
      if (!isPlainObject(at[key])) {
        if (action === "unset") return { json: { file, key: path.join("."), changed: false }, text: `${path.join(".")} is not set in ${file}` };
        at[key] = {};
      }
      at = at[key] as Record<string, unknown>;
    }
    const last = path.at(-1)!;
    if (action === "unset") {
      if (!Object.hasOwn(at, last)) return { json: { file, key: path.join("."), changed: false }, text: `${path.join(".")} is not set in ${file}` };
      delete at[last];
    } else at[last] = value;
    // The whole file is checked as a load would read it, before anything is written.
    parseConfig(next, file);
    writeJsonAtomic(file, next);
    return {
      json: { file, key: path.join("."), value: value ?? null, changed: true },
      text: action === "set" ? `set ${path.join(".")} = ${JSON.stringify(value)} in ${file}` : `unset ${path.join(".")} in ${file}`,
    };
  },
});

function readRaw(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new CxError("E_CONFIG", `the config file ${file} is not valid JSON: ${(error as Error).message}`, { hint: `fix ${file} by hand first` });
  }
  if (!isPlainObject(raw)) throw new CxError("E_CONFIG", `the config file ${file} is not a JSON object`, { hint: `fix ${file} by hand first` });
  return raw;
}

/** JSON when it parses (true, 2, ["a"], {"k": 1}, "quoted"), else the text itself, as a string. */
function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
