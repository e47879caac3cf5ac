/**
 * The CLI's words for what to do next. The library describes a next step as data (errors.ts
 * NextStep); only here does it become a command line, with the flags this CLI has.
 */
import { accessSync, constants, realpathSync } from "node:fs";
import { delimiter, isAbsolute, join, relative } from "node:path";
import type { CxError, NextStep } from "../errors.ts";
import { isCompiled } from "../session/host-command.ts";

let self: string | null = null;

/**
 * How the user runs this CLI: the words a hint's commands start with, so that every command a
 * hint names can be typed as it is. Through a package script that is `npm run -s cxagent --`
 * (`bun run cxagent` under bun), through npx `npx cxagent`; a `cxagent` on PATH that is this very
 * program is `cxagent`; otherwise the path of the binary or of the package's launcher (bin/cxagent),
 * relative to the current folder when it lies inside it.
 */
export function selfCommand(env: NodeJS.ProcessEnv = process.env): string {
  return (self ??= findSelfCommand(env));
}

function findSelfCommand(env: NodeJS.ProcessEnv): string {
  const launcher = env.CXAGENT_LAUNCHER;
  const viaLauncher = typeof launcher === "string" && launcher !== "";
  if (viaLauncher && env.npm_lifecycle_event === "cxagent") {
    return env.npm_config_user_agent?.startsWith("bun/") ? "bun run cxagent" : "npm run -s cxagent --";
  }
  if (viaLauncher && env.npm_lifecycle_event === "npx" && env.npm_command === "exec") return "npx cxagent";
  // Through the launcher, the launcher is what the user typed (it may run dist/cxagent itself).
  const program = viaLauncher ? launcher : isCompiled() ? process.execPath : join(import.meta.dir, "../../bin/cxagent");
  if (onPath("cxagent", program, env)) return "cxagent";
  return shellWord(shortPath(program));
}

/** The global flags of this run that say where plugins, approvals and grants are (see hintCommand). */
let locationFlags: string[] = [];

/**
 * Remembers the --config-dir, --state-dir and --cwd this run was given, as typed, so that a command
 * a hint names finds the same plugin, approvals and grants: `invoke calculator … --config-dir D`
 * must hint `approve calculator --config-dir D`, which without the flag finds no such plugin.
 */
export function rememberLocationFlags(args: Record<string, unknown>): void {
  locationFlags = [];
  for (const flag of ["cwd", "config-dir", "state-dir"]) {
    const value = args[flag];
    if (typeof value === "string") locationFlags.push(`--${flag} ${shellWord(value)}`);
  }
}

/** A cxagent command line for a hint: how the user runs cxagent, the words, this run's location flags. */
export function hintCommand(words: string): string {
  return [selfCommand(), words, ...locationFlags].join(" ");
}

/** Whether `name` on PATH is `program` itself (symbolic links resolved). */
function onPath(name: string, program: string, env: NodeJS.ProcessEnv): boolean {
  let target: string;
  try {
    target = realpathSync(program);
  } catch {
    return false;
  }
  for (const folder of (env.PATH ?? "").split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate) === target;
    } catch {
      // not in this folder: the shell would look in the next one
    }
  }
  return false;
}

/** A path relative to the current folder (`./bin/cxagent`) when it lies inside it, else absolute. */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? `./${rel}` : path;
}

/** A word for the shell: quoted when it holds anything the shell would read. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function wordNextStep(next: NextStep, hint: string | undefined): string {
  const cx = (words: string) => hintCommand(words);
  switch (next.do) {
    case "approve": {
      const ref = shellWord(next.ref);
      return `review it with '${cx(`describe ${ref}`)}', then approve it: '${cx(`approve ${ref}`)}' on a terminal, or '${cx(`approve ${ref} --hash ${next.hash}`)}'`;
    }
    case "load-once":
      return `load it for this run only with --once (it still needs approval), or set enabled: true in config.json`;
    case "allow-call":
      return `there was no terminal to ask on; pass --allow to allow this one call`;
    case "raise-timeout":
      return `the plugin's call runs on (it cannot be interrupted) and its late answer will be discarded; give a longer --timeout than ${next.ms} ms if it needs more time`;
    case "see-output":
      return `${hint ? `${hint}; ` : ""}run again with --verbose to see everything the plugin wrote`;
    case "restart":
      return `stuck calls cannot be interrupted; wait for them, or run the command again (a new run starts a fresh plugin host)`;
    case "choose-folder": {
      const flag = next.which === "state" ? "--state-dir" : next.which === "config" ? "--config-dir" : "--cwd";
      return next.which === "project" ? `give ${flag} an existing folder` : `check that ${next.path} exists and is writable, or choose another folder with ${flag}`;
    }
    case "list-plugins":
      return `${hint ? `${hint}; ` : ""}see ${cx("list")}`;
    case "report-bug":
      return `this is a bug in cxagent; run again with --verbose and report the output`;
  }
}

/**
 * The hint the CLI shows for an error: its next step in CLI words, else the library's words. A
 * crash's library hint is about the session's next call, which a one-shot run does not make: the
 * CLI says where the plugin's own words are instead.
 */
export function cliHint(error: CxError): string | undefined {
  if (error.code === "E_CRASHED" && error.next?.do === "see-output") {
    const wrote = Array.isArray(error.details?.stderr) && error.details.stderr.length > 0;
    return wrote
      ? "the message ends with the last lines the plugin wrote; run again with --verbose to see everything it wrote"
      : "the plugin wrote nothing to stderr before it crashed; run again with --verbose to see its logs";
  }
  return error.next ? wordNextStep(error.next, error.hint) : error.hint;
}
