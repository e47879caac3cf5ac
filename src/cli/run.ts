/**
 * The CLI's own main(): picks the command, parses its arguments strictly (an unknown flag or an
 * extra argument is a usage error, unlike citty's runMain), runs it, prints, and maps errors to
 * the exit codes of errors.ts — the only place that does. With --json, whatever happens, stdout
 * gets exactly one JSON document.
 */
import { type ArgsDef, type CommandDef, defineCommand, renderUsage } from "citty";
import { existsSync, statSync } from "node:fs";
import pkg from "../../package.json" with { type: "json" };
import { asCxError, CxError } from "../errors.ts";
import { CONTRACT_CURRENT, CONTRACT_OLDEST } from "../protocol/manifest.ts";
import { didYouMean } from "../suggest.ts";
import { globalArgs } from "./_args.ts";
import { rememberLocationFlags, selfCommand } from "./_hints.ts";
import { type CommandResult, type OutputMode, printError, printResult, stripAnsi, useColor } from "./_output.ts";
import { flagRequested, parseCommandLine } from "./_parse.ts";
import { summaryOf } from "./_meta.ts";
import { COMMAND_NAMES, type CommandModule, COMMANDS as REGISTRY, HIDDEN, type Loader, VARIADIC } from "./_commands.ts";

export type { CommandModule } from "./_commands.ts";
import { isTTY, out } from "./_stdio.ts";

/**
 * The hidden command the completion scripts call; it reads the registry (_commands.ts), so the
 * registry does not name it: it is added here, where nothing imports back.
 */
const COMMANDS: Record<string, Loader> = { ...REGISTRY, __complete: () => import("./commands/complete.ts") as never };

/** The summaries of this file's own commands: help, and version (the same as --version). */
const OWN_SUMMARIES: Record<string, string> = {
  version: "The version (--verbose: Bun, plugin contract, platform), as --version",
  help: "Help for cxagent, or for one command",
};

/** A command as the top-level help lists it: its name and the summary its own meta gives. */
async function summaryCommand(name: string): Promise<CommandDef<ArgsDef>> {
  const meta = await resolveValue((await COMMANDS[name]!()).default.meta);
  return defineCommand({ meta: { name, description: summaryOf(meta) } }) as CommandDef<ArgsDef>;
}


function rootCommand() {
  return defineCommand({
    meta: { name: selfCommand(), version: pkg.version, description: "Native tool plugins for AI coding agents, each in its own process" },
    args: {
      ...globalArgs,
      version: { type: "boolean", alias: ["v", "V"], description: "Print the version (with --verbose: Bun, plugin contract, platform)" },
      help: { type: "boolean", alias: "h", description: "Show this help, or a command's with <command> --help" },
    },
    // Each command's summary is its own meta's, read only when this list is shown.
    subCommands: Object.fromEntries(COMMAND_NAMES.map((name) => [name, name in OWN_SUMMARIES ? defineCommand({ meta: { name, description: OWN_SUMMARIES[name] } }) : () => summaryCommand(name)])),
  }) as CommandDef<ArgsDef>;
}

export async function main(argv: string[]): Promise<number> {
  enterUserFolder();
  applyColorFlag(argv);
  const mode: OutputMode = flagRequested(argv, "json") ? "json" : flagRequested(argv, "jsonl") ? "jsonl" : "text";
  let errorDocument: CommandModule["errorDocument"];
  try {
    const { name, rest } = splitCommand(argv);
    if (name === null) return await topLevel(rest, mode);
    if (name === "help") return await help(rest, mode);
    // `cxagent version`, as gh version: the same as --version, whose flags it takes.
    if (name === "version") return await topLevel(["--version", ...rest], mode);
    const module = await COMMANDS[name]!();
    errorDocument = module.errorDocument;
    const command = module.default;
    const args = { ...globalArgs, ...((await resolveValue(command.args)) ?? {}) } as ArgsDef;
    const full = defineCommand({ ...command, meta: { ...(await resolveValue(command.meta)), name } });
    if (wantsHelp(rest)) return await printUsage({ ...full, args }, rootCommand(), name, mode);
    const parsed = parseCommandLine(rest, args, { command: name, variadic: VARIADIC.has(name), explainsMissing: module.explainsMissing, self: selfCommand });
    rememberLocationFlags(parsed as Record<string, unknown>);
    const result = (await command.run?.({ rawArgs: rest, args: parsed as never, cmd: full })) as CommandResult;
    printResult(result, mode === "json");
    return result.exitCode ?? 0;
  } catch (error) {
    const cx = asCxError(error);
    printError(cx, mode, errorDocument);
    return cx.exitCode;
  }
}

/**
 * --no-color and --color, before anything is printed (a usage error included): as NO_COLOR and
 * FORCE_COLOR, which every writer here already follows, and which a plugin host sees too
 * (NO_COLOR is on its environment's allow-list). The last one given wins, as in npm.
 */
function applyColorFlag(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  const end = argv.indexOf("--");
  const flag = (end < 0 ? argv : argv.slice(0, end)).findLast((t) => t === "--color" || t === "--no-color" || t === "--color=true" || t === "--color=false");
  if (flag === undefined) return;
  if (flag === "--no-color" || flag === "--color=false") {
    delete env.FORCE_COLOR;
    env.NO_COLOR = "1";
  } else {
    delete env.NO_COLOR;
    env.FORCE_COLOR = "1";
  }
}

/**
 * Run through a package script (`npm run -s cxagent -- …`), the process starts in the package's
 * root; the folder the user typed the command in is INIT_CWD. Relative paths, the project folder
 * and the scope of grants are the user's, so the CLI moves back there first.
 */
function enterUserFolder(env: NodeJS.ProcessEnv = process.env) {
  const from = env.INIT_CWD;
  if (env.npm_lifecycle_event !== "cxagent" || !from || from === process.cwd()) return;
  try {
    if (existsSync(from) && statSync(from).isDirectory()) process.chdir(from);
  } catch {
    // the folder went away: stay where the script put us
  }
}

async function resolveValue<T>(value: T | (() => T | Promise<T>) | Promise<T> | undefined): Promise<T | undefined> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

/** `-h` / `--help` among the flags (before `--`). */
function wantsHelp(tokens: readonly string[]): boolean {
  for (const token of tokens) {
    if (token === "--") return false;
    if (token === "--help" || token === "-h") return true;
  }
  return false;
}

/** Finds the command name: the first word that is not a global flag or a global flag's value. */
function splitCommand(argv: string[]): { name: string | null; rest: string[] } {
  const takesValue = new Set(Object.entries(globalArgs).filter(([, d]) => d.type === "string").map(([k]) => `--${k}`));
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") break;
    if (token.startsWith("-") && token !== "-") {
      if (takesValue.has(token)) i++;
      continue;
    }
    if (token === "help" || token === "version" || token in COMMANDS) return { name: token, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
    throw new CxError("E_USAGE", `unknown command '${token}'${didYouMean(token, COMMAND_NAMES)}`, {
      hint: `commands: ${COMMAND_NAMES.join(", ")}; see ${selfCommand()} --help`,
    });
  }
  return { name: null, rest: argv };
}

/** No command: --version, --help, or a usage error. Global flags are still checked strictly. */
async function topLevel(rest: string[], mode: OutputMode): Promise<number> {
  const root = rootCommand();
  const parsed = parseCommandLine(rest, root.args as ArgsDef, { command: "", self: selfCommand });
  if (parsed.version === true) {
    const info = { name: "cxagent", version: pkg.version, contract: CONTRACT_CURRENT, oldestContract: CONTRACT_OLDEST, bun: Bun.version, platform: `${process.platform}-${process.arch}` };
    if (mode !== "text") out(JSON.stringify(info, null, mode === "json" ? 2 : undefined) + "\n");
    else if (parsed.verbose === true) {
      out(`cxagent ${info.version}\nplugin contract ${info.contract} (loads ${info.oldestContract} to ${info.contract})\nbun ${info.bun}\nplatform ${info.platform}\n`);
    } else out(`${info.version}\n`);
    return 0;
  }
  if (parsed.help === true) return printUsage(root, undefined, null, mode);
  throw new CxError("E_USAGE", "no command given", { hint: `commands: ${COMMAND_NAMES.join(", ")}; see ${selfCommand()} --help` });
}

/** `help`, `help <command>`. */
async function help(rest: string[], mode: OutputMode): Promise<number> {
  const parsed = parseCommandLine(rest, { ...globalArgs, command: { type: "positional", required: false } }, { command: "help", self: selfCommand });
  const name = typeof parsed.command === "string" ? parsed.command : null;
  if (name === null || name === "help") return printUsage(rootCommand(), undefined, null, mode);
  if (!(name in COMMANDS) || HIDDEN.has(name)) {
    throw new CxError("E_USAGE", `unknown command '${name}'${didYouMean(name, COMMAND_NAMES)}`, { hint: `commands: ${COMMAND_NAMES.join(", ")}` });
  }
  const command = (await COMMANDS[name]!()).default;
  const args = { ...globalArgs, ...((await resolveValue(command.args)) ?? {}) } as ArgsDef;
  return printUsage({ ...command, meta: { ...(await resolveValue(command.meta)), name }, args }, rootCommand(), name, mode);
}

async function printUsage(command: CommandDef<ArgsDef>, parent: CommandDef<ArgsDef> | undefined, name: string | null, mode: OutputMode): Promise<number> {
  // citty pads every row of its tables to the widest: trailing spaces a terminal shows as nothing and a diff or copy keeps.
  const usage = (await renderUsage(command, parent)).replace(/[ \t]+$/gm, "");
  if (mode !== "text") {
    out(JSON.stringify({ command: name, usage: stripAnsi(usage) }, null, mode === "json" ? 2 : undefined) + "\n");
  } else {
    out((useColor({ isTTY: isTTY(1) }) ? usage : stripAnsi(usage)) + "\n");
  }
  return 0;
}
