/**
 * The CLI's commands, each loaded only when it runs: run.ts dispatches through this table, and
 * commands/complete.ts reads it to complete their names and flags.
 */
import type { ArgsDef, CommandDef } from "citty";
import type { CxError } from "../errors.ts";

/** A command's module: its definition, and optionally the JSON shape of its failures. */
export interface CommandModule {
  default: CommandDef<ArgsDef>;
  /** The document --json / --jsonl print when the command fails (default `{"error": …}`). */
  errorDocument?: (error: CxError) => unknown;
  /** Required positionals its run() explains itself when they are missing (see ParseOptions). */
  explainsMissing?: readonly string[];
}

export type Loader = () => Promise<CommandModule>;

export const COMMANDS: Record<string, Loader> = {
  list: () => import("./commands/list.ts") as never,
  install: () => import("./commands/install.ts") as never,
  uninstall: () => import("./commands/uninstall.ts") as never,
  describe: () => import("./commands/describe.ts") as never,
  approve: () => import("./commands/approve.ts") as never,
  revoke: () => import("./commands/revoke.ts") as never,
  load: () => import("./commands/load.ts") as never,
  invoke: () => import("./commands/invoke.ts") as never,
  gate: () => import("./commands/gate.ts") as never,
  command: () => import("./commands/command.ts") as never,
  watch: () => import("./commands/watch.ts") as never,
  grants: () => import("./commands/grants.ts") as never,
  approvals: () => import("./commands/approvals.ts") as never,
  secrets: () => import("./commands/secrets.ts") as never,
  reap: () => import("./commands/reap.ts") as never,
  result: () => import("./commands/result.ts") as never,
  instructions: () => import("./commands/instructions.ts") as never,
  mcp: () => import("./commands/mcp.ts") as never,
  new: () => import("./commands/new.ts") as never,
  check: () => import("./commands/check.ts") as never,
  paths: () => import("./commands/paths.ts") as never,
  config: () => import("./commands/config.ts") as never,
  completions: () => import("./commands/completions.ts") as never,
};

/** Commands whose last positional takes every further word. */
export const VARIADIC = new Set(["command", "instructions", "mcp", "__complete"]);

export const HIDDEN = new Set(["__complete"]);


/** The names the user may type (the hidden ones left out), version and help. */
export const COMMAND_NAMES = [...Object.keys(COMMANDS).filter((n) => !HIDDEN.has(n)), "version", "help"];
