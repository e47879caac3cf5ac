import { defineCommand } from "citty";
import { kernelSandbox } from "../../session/sandbox-facts.ts";
import { commandMeta } from "../_meta.ts";
import { accessSync, constants, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { configPath, type Config, EMPTY_CONFIG, readConfig } from "../../discovery/config.ts";
import { searchFolders } from "../../discovery/discover.ts";
import { resolveFolders } from "../../discovery/paths.ts";
import { isCxError } from "../../errors.ts";
import { globalOptions } from "../_args.ts";
import { selfCommand } from "../_hints.ts";
import type { CommandResult } from "../_output.ts";

/** What a path is and what this process may do with it. */
interface PathState {
  path: string;
  exists: boolean;
  kind: "folder" | "file" | "other" | null;
  readable: boolean;
  writable: boolean;
}

function stateOf(path: string): PathState {
  let kind: PathState["kind"] = null;
  try {
    const stat = statSync(path);
    kind = stat.isDirectory() ? "folder" : stat.isFile() ? "file" : "other";
  } catch {
    return { path, exists: false, kind: null, readable: false, writable: false };
  }
  const can = (mode: number) => {
    try {
      accessSync(path, mode);
      return true;
    } catch {
      return false;
    }
  };
  return { path, exists: true, kind, readable: can(constants.R_OK | (kind === "folder" ? constants.X_OK : 0)), writable: can(constants.W_OK) };
}

export default defineCommand({
  meta: commandMeta({ name: "paths", description: "The folders and files cxagent uses here — project, config, state, plugin search folders — and whether each can be read", summary: "The folders and files cxagent uses, and whether each can be read" }),
  args: {},
  run({ args }): CommandResult {
    const options = globalOptions(args);
    const project = resolve(options.cwd);
    const folders = resolveFolders(options);
    const configFile = configPath(folders.configDir);
    let config: Config = EMPTY_CONFIG;
    let configProblem: string | null = null;
    try {
      config = readConfig(folders.configDir);
    } catch (error) {
      if (!isCxError(error)) throw error;
      configProblem = error.message;
    }
    const state = (name: string) => stateOf(join(folders.stateDir, name));
    const json = {
      command: selfCommand(),
      project: stateOf(project),
      config: { ...stateOf(folders.configDir), file: { ...stateOf(configFile), problem: configProblem } },
      state: {
        ...stateOf(folders.stateDir),
        approvals: state("approvals.json"),
        permissions: state("permissions.json"),
        sessions: state("sessions"),
        checkedSchemas: state("checked-schemas.json"),
      },
      plugins: searchFolders(config, project, folders.configDir).map((f) => ({ ...stateOf(f.path), origin: f.origin })),
      sandbox: kernelSandbox(),
    };
    const word = (s: PathState, missing: string) =>
      !s.exists ? missing : `${s.kind}${s.readable ? "" : ", NOT READABLE"}${s.kind === "folder" && !s.writable ? ", read-only" : ""}`;
    const origins = { pluginPaths: "pluginPaths in config.json", project: "the project's own", config: "the config folder's" } as const;
    const lines = [
      `command      ${json.command}`,
      `project      ${project}  (${word(json.project, "missing")})`,
      `config       ${folders.configDir}  (${word(json.config, "missing; only you create it")})`,
      `  config.json  ${configFile}  (${configProblem ? `INVALID: ${configProblem.split("\n")[0]}` : word(json.config.file, "missing: an empty config is used")})`,
      `state        ${folders.stateDir}  (${word(json.state, "missing; made at the first approval or grant")})`,
      `  approvals    ${json.state.approvals.path}  (${word(json.state.approvals, "none yet")})`,
      `  permissions  ${json.state.permissions.path}  (${word(json.state.permissions, "none yet")})`,
      `  sessions     ${json.state.sessions.path}  (${word(json.state.sessions, "none yet")})`,
      `  schemas      ${json.state.checkedSchemas.path}  (${word(json.state.checkedSchemas, "none yet")}; a cache of inputSchemas found valid)`,
      "plugin folders, searched in this order:",
      ...json.plugins.map((p, i) => `  ${i + 1}. ${p.path}  (${origins[p.origin]}; ${word(p, "missing")})`),
      `sandbox      ${json.sandbox.words}`,
    ];
    return { json, text: lines.join("\n"), exitCode: 0 };
  },
});
