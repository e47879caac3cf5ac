import { type ArgsDef, defineCommand } from "citty";
import { Session } from "../../session/session.ts";
import { globalArgs } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { COMMAND_NAMES, COMMANDS } from "../_commands.ts";
import { SHELLS } from "./completions.ts";

/** Commands whose first positional is a plugin. */
const TAKES_PLUGIN = new Set(["describe", "approve", "revoke", "load", "invoke", "gate", "command", "watch", "instructions", "mcp"]);
/** Commands whose every positional is a plugin. */
const PLUGINS_ONLY = new Set(["instructions", "mcp"]);

/**
 * `cxagent __complete -- WORD…`: the candidates for the last word, one per line, for the scripts
 * of `cxagent completions`. Reads config.json and sidecars only (no plugin code runs, nothing is
 * reaped); never fails: with nothing to offer it prints nothing, and the shell completes files.
 */
export default defineCommand({
  meta: { name: "__complete", description: "Completion candidates (used by the completion scripts)" },
  args: { words: { type: "positional", required: false } },
  async run({ args }): Promise<CommandResult> {
    let candidates: string[] = [];
    try {
      candidates = await candidatesFor(args._);
    } catch {
      candidates = [];
    }
    return { json: candidates, text: candidates.join("\n") };
  },
});

async function candidatesFor(words: string[]): Promise<string[]> {
  const partial = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  const globalValue = new Set(Object.entries(globalArgs).filter(([, d]) => d.type === "string").map(([k]) => `--${k}`));
  let command: string | null = null;
  let args: ArgsDef = globalArgs;
  const positionals: string[] = [];
  const globals: Record<string, string> = {};
  let valueOf: string | null = null;
  for (let i = 0; i < before.length; i++) {
    const token = before[i]!;
    if (valueOf !== null) {
      globals[valueOf] = token;
      valueOf = null;
      continue;
    }
    if (token.startsWith("-") && token !== "-") {
      const name = token.replace(/^--?/, "").split("=")[0]!;
      const def = args[name];
      if (!token.includes("=") && ((def && def.type === "string") || (command === null && globalValue.has(token)))) valueOf = name;
      continue;
    }
    if (command === null) {
      command = token;
      if (!(token in COMMANDS) && token !== "help") return [];
      args = token === "help" ? globalArgs : { ...globalArgs, ...(((await COMMANDS[token]!()).default.args as ArgsDef | undefined) ?? {}) };
      continue;
    }
    positionals.push(token);
  }
  const starting = (list: Iterable<string>) => [...new Set(list)].filter((c) => c.startsWith(partial)).sort();
  if (valueOf !== null) return starting(valueOf === "lang" ? ["c", "rust"] : []);
  if (partial.startsWith("-")) {
    const flags = Object.entries(args).filter(([, d]) => d.type !== "positional").map(([k]) => `--${k}`);
    return starting(command === null ? [...flags, "--version", "--help"] : [...flags, "--help"]);
  }
  if (command === null) return starting(COMMAND_NAMES);
  if (command === "help") return positionals.length ? [] : starting(COMMAND_NAMES);
  if (command === "completions") return positionals.length ? [] : starting(SHELLS);
  if (!TAKES_PLUGIN.has(command)) return [];
  await using session = await Session.open({ cwd: globals.cwd, configDir: globals["config-dir"], stateDir: globals["state-dir"], reap: false });
  if (positionals.length === 0 || PLUGINS_ONLY.has(command)) return starting(session.available().map((p) => p.name));
  if (positionals.length === 1 && (command === "invoke" || command === "gate" || command === "command")) {
    const manifest = session.inspect(positionals[0]!).manifest;
    return starting(command === "command" ? manifest.commands.map((c) => c.name) : manifest.tools.map((t) => t.name));
  }
  return [];
}
