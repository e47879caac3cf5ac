/**
 * The CLI's own main(): picks the command, parses its arguments strictly (an unknown flag is a
 * usage error, unlike citty's runMain), runs it, prints, and maps errors to the exit codes of
 * SPEC §9 — the only place that does.
 */
import { type ArgsDef, type CommandDef, defineCommand, parseArgs, renderUsage } from "citty";
import pkg from "../../package.json" with { type: "json" };
import { asCxError, CxError } from "../errors.ts";
import { globalArgs } from "./_args.ts";
import { type CommandResult, printError, printResult, stripAnsi } from "./_output.ts";

type Loader = () => Promise<{ default: CommandDef<ArgsDef> }>;

const COMMANDS: Record<string, Loader> = {
  list: () => import("./commands/list.ts") as never,
  describe: () => import("./commands/describe.ts") as never,
  approve: () => import("./commands/approve.ts") as never,
  revoke: () => import("./commands/revoke.ts") as never,
  load: () => import("./commands/load.ts") as never,
  invoke: () => import("./commands/invoke.ts") as never,
  gate: () => import("./commands/gate.ts") as never,
  command: () => import("./commands/command.ts") as never,
  watch: () => import("./commands/watch.ts") as never,
  grants: () => import("./commands/grants.ts") as never,
  reap: () => import("./commands/reap.ts") as never,
  instructions: () => import("./commands/instructions.ts") as never,
  mcp: () => import("./commands/mcp.ts") as never,
  new: () => import("./commands/new.ts") as never,
  check: () => import("./commands/check.ts") as never,
};

const SUMMARIES: Record<string, string> = {
  list: "Discovered and configured plugins, with their trust status",
  describe: "What a plugin declares (no plugin code runs); --live loads it and compares",
  approve: "Approve a plugin's exact files, interactively or by pinned hash",
  revoke: "Withdraw a plugin's approval",
  load: "Load a plugin (trust, spawn, handshake, describe, start, stop), with timings",
  invoke: "Call one of a plugin's tools",
  gate: "Show the permission decision for a call, without making it",
  command: "Run one of a plugin's commands",
  watch: "Print the work a plugin submits, as JSON lines",
  instructions: "Print the instructions loaded plugins add for the model",
  grants: "List or revoke standing permission grants",
  reap: "End processes left behind by sessions that died",
  mcp: "Serve plugins to an MCP client (Claude Code, Codex, Cursor, …) over stdio or HTTP",
  new: "Start a new plugin in C or Rust, ready to build",
  check: "Run a plugin through every check of the contract, each pass, warn or fail",
};

const root = defineCommand({
  meta: { name: "cxagent", version: pkg.version, description: "Native tool plugins for AI coding agents, each in its own process" },
  args: globalArgs,
  subCommands: Object.fromEntries(
    Object.keys(COMMANDS).map((name) => [name, defineCommand({ meta: { name, description: SUMMARIES[name] } })]),
  ),
});

export async function main(argv: string[]): Promise<number> {
  const wantsJson = argv.includes("--json");
  try {
    const { name, rest } = splitCommand(argv);
    if (!name) {
      if (argv.includes("--version")) {
        process.stdout.write(`${pkg.version}\n`);
        return 0;
      }
      if (argv.includes("--help") || argv.includes("-h")) {
        await printUsage(root as CommandDef<ArgsDef>);
        return 0;
      }
      const word = argv.find((a) => !a.startsWith("-"));
      throw new CxError("E_USAGE", word === undefined ? "no command given" : `unknown command '${word}'`, {
        hint: `commands: ${Object.keys(COMMANDS).join(", ")}; see cxagent --help`,
      });
    }
    const command = (await COMMANDS[name]!()).default;
    const args = { ...globalArgs, ...((await resolveValue(command.args)) ?? {}) } as ArgsDef;
    const full = defineCommand({ ...command, args });
    if (rest.includes("--help") || rest.includes("-h")) {
      await printUsage(full, root as CommandDef<ArgsDef>);
      return 0;
    }
    const parsed = parseStrict(rest, args, name);
    const result = (await command.run?.({ rawArgs: rest, args: parsed as never, cmd: full })) as CommandResult;
    printResult(result, parsed.json === true);
    return result.exitCode ?? 0;
  } catch (error) {
    const cx = asCxError(error);
    printError(cx, wantsJson);
    return cx.exitCode;
  }
}

async function resolveValue<T>(value: T | (() => T | Promise<T>) | Promise<T> | undefined): Promise<T | undefined> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

/** Finds the command name: the first word that is not a global flag or a global flag's value. */
function splitCommand(argv: string[]): { name: string | null; rest: string[] } {
  const takesValue = new Set(Object.entries(globalArgs).filter(([, d]) => d.type === "string").map(([k]) => `--${k}`));
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") break;
    if (token.startsWith("-")) {
      if (takesValue.has(token)) i++;
      continue;
    }
    if (!(token in COMMANDS)) return { name: null, rest: argv };
    return { name: token, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: null, rest: argv };
}

/** citty's parser, plus what it does not check: unknown flags and string flags without a value. */
function parseStrict(rest: string[], args: ArgsDef, command: string) {
  const known = new Map<string, { type?: string }>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    known.set(name, def);
    const aliases = "alias" in def && def.alias ? (Array.isArray(def.alias) ? def.alias : [def.alias]) : [];
    for (const alias of aliases) known.set(alias, def);
  }
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!;
    if (token === "--") break;
    if (!token.startsWith("-") || token === "-") continue;
    const name = token.replace(/^--?/, "").split("=")[0]!;
    const def = known.get(name) ?? (name.startsWith("no-") && known.get(name.slice(3))?.type === "boolean" ? known.get(name.slice(3)) : undefined);
    if (!def) {
      throw new CxError("E_USAGE", `unknown option '${token.split("=")[0]}' for 'cxagent ${command}'`, {
        hint: `see cxagent ${command} --help`,
      });
    }
    if (def.type === "string" && !token.includes("=")) {
      const value = rest[i + 1];
      if (value === undefined || (value.startsWith("-") && value !== "-")) {
        throw new CxError("E_USAGE", `option '${token}' needs a value`, { hint: `see cxagent ${command} --help` });
      }
      i++;
    }
  }
  let parsed;
  try {
    parsed = parseArgs(rest, args);
  } catch (error) {
    throw new CxError("E_USAGE", stripAnsi((error as Error).message), { hint: `see cxagent ${command} --help` });
  }
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional" && def.required && (parsed[name] === undefined || parsed[name] === "")) {
      throw new CxError("E_USAGE", `'cxagent ${command}' needs <${name}>`, { hint: `see cxagent ${command} --help` });
    }
  }
  return parsed;
}

async function printUsage(command: CommandDef<ArgsDef>, parent?: CommandDef<ArgsDef>) {
  const usage = await renderUsage(command, parent);
  process.stdout.write((process.stdout.isTTY && !process.env.NO_COLOR ? usage : stripAnsi(usage)) + "\n");
}
