/**
 * Argument fragments shared by every command (SPEC §9 "global"), spread into each command's args.
 */
import type { ArgsDef } from "citty";
import { CxError } from "../errors.ts";

export const globalArgs = {
  json: { type: "boolean", description: "Print exactly one JSON document on stdout, also on failure" },
  cwd: { type: "string", description: "Project folder (default: the current directory); relative paths are read from it too, as after git -C or make -C", valueHint: "DIR" },
  "config-dir": { type: "string", description: "Configuration folder (default: $CXAGENT_CONFIG_DIR or ~/.config/cxagent)", valueHint: "DIR" },
  "state-dir": { type: "string", description: "State folder (default: $CXAGENT_STATE_DIR or ~/.local/state/cxagent)", valueHint: "DIR" },
  verbose: { type: "boolean", description: "Show debug logs and everything plugins write to stderr" },
  color: { type: "boolean", description: "Colour: --no-color never, --color always (default: on a terminal, unless $NO_COLOR is set)" },
} as const satisfies ArgsDef;

export const pluginArg = {
  plugin: { type: "positional", description: "A plugin name, or the path of its library, sidecar or folder", required: true },
} as const satisfies ArgsDef;

export interface GlobalOptions {
  json: boolean;
  cwd: string;
  configDir?: string;
  stateDir?: string;
  verbose: boolean;
}

export function globalOptions(args: Record<string, unknown>): GlobalOptions {
  return {
    json: args.json === true,
    cwd: typeof args.cwd === "string" ? args.cwd : process.cwd(),
    configDir: typeof args["config-dir"] === "string" ? args["config-dir"] : undefined,
    stateDir: typeof args["state-dir"] === "string" ? args["state-dir"] : undefined,
    verbose: args.verbose === true,
  };
}

/** `--hash`: 64 hexadecimal digits, in either case; undefined when not given. */
export function hashArg(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const hash = value.trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hash)) throw new CxError("E_USAGE", `--hash takes 64 hexadecimal digits, not '${value}'`);
  return hash;
}

/** Every value of a repeatable flag, in order (`--flag V` and `--flag=V`), up to a `--`. */
export function repeatedValues(rawArgs: readonly string[], flag: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const token = rawArgs[i]!;
    if (token === "--") break;
    if (token === flag && i + 1 < rawArgs.length) values.push(rawArgs[++i]!);
    else if (token.startsWith(`${flag}=`)) values.push(token.slice(flag.length + 1));
  }
  return values;
}
