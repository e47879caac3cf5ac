/**
 * Where cxagent keeps things: the config folder (written only by the user) and the state folder
 * (approvals, grants, session records). Flags win over the environment, which wins over XDG.
 */
import { join, resolve } from "node:path";

export interface Folders {
  configDir: string;
  stateDir: string;
}

/**
 * The home folder: $HOME, or the password database's when it is unset. node:os is loaded only
 * then: loading it cost a one-shot command about 1 ms.
 */
function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME || (require("node:os") as typeof import("node:os")).homedir();
}

export function resolveFolders(options: { configDir?: string; stateDir?: string } = {}, env = process.env): Folders {
  const home = homeOf(env);
  const configDir =
    options.configDir ?? env.CXAGENT_CONFIG_DIR ?? join(env.XDG_CONFIG_HOME || join(home, ".config"), "cxagent");
  const stateDir =
    options.stateDir ?? env.CXAGENT_STATE_DIR ?? join(env.XDG_STATE_HOME || join(home, ".local", "state"), "cxagent");
  return { configDir: resolve(configDir), stateDir: resolve(stateDir) };
}

/** Expands a leading `~` and `$VAR` / `${VAR}` references in a configured path. */
export function expandPath(path: string, env = process.env): string {
  const home = homeOf(env);
  const withHome = path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : path;
  return withHome.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, a, b) => env[a ?? b] ?? "");
}
