/**
 * The CLI's one argument parser, over citty's argument definitions. Strict where citty's runMain is
 * lenient: an unknown flag, a missing value and an extra positional are usage errors, each with a
 * "did you mean" when one is close. `--json` is read by the same rules everywhere (flags,
 * `--json=true`, `--` ends the flags), so the error path agrees with the parser.
 */
import type { ArgsDef } from "citty";
import { CxError } from "../errors.ts";
import { didYouMean } from "../suggest.ts";

export type Parsed = { _: string[] } & Record<string, string | boolean | string[] | undefined>;

const TRUE = new Set(["true", "1", "yes"]);
const FALSE = new Set(["false", "0", "no"]);

/** A boolean flag's value from `--flag`, `--flag=true|false`, `--no-flag`; undefined for an unknown word. */
function booleanValue(text: string | undefined): boolean | undefined {
  if (text === undefined) return true;
  const lower = text.toLowerCase();
  return TRUE.has(lower) ? true : FALSE.has(lower) ? false : undefined;
}

/**
 * Whether the command line asks for one JSON document, read the way the parser reads it: the
 * last `--json` / `--json=…` / `--no-json` before `--` wins. Used before parsing, so that a usage
 * error is printed in the form that was asked for.
 */
export function flagRequested(argv: readonly string[], flag: string): boolean {
  let wanted = false;
  for (const token of argv) {
    if (token === "--") break;
    if (token === `--${flag}`) wanted = true;
    else if (token === `--no-${flag}`) wanted = false;
    else if (token.startsWith(`--${flag}=`)) wanted = booleanValue(token.slice(flag.length + 3)) ?? wanted;
  }
  return wanted;
}

export interface ParseOptions {
  /** The command, for messages ("for 'cxagent invoke'"). */
  command: string;
  /** The last positional takes every further word (command TEXT..., instructions PLUGIN...). */
  variadic?: boolean;
  /** Required positionals the command itself explains when missing (invoke without <tool> lists the plugin's tools). */
  explainsMissing?: readonly string[];
  /** How the user runs cxagent, for the hints' commands (asked only for a hint: finding it reads PATH). */
  self: () => string;
}

/** Parses `tokens` against `args`: flags by name or alias, then positionals in their order. */
export function parseCommandLine(tokens: readonly string[], args: ArgsDef, options: ParseOptions): Parsed {
  const flags = new Map<string, { key: string; type: string }>();
  const positionals: string[] = [];
  for (const [key, def] of Object.entries(args)) {
    const type = def.type ?? "string";
    if (type === "positional") {
      positionals.push(key);
      continue;
    }
    flags.set(key, { key, type });
    const aliases = "alias" in def && def.alias ? (Array.isArray(def.alias) ? def.alias : [def.alias]) : [];
    for (const alias of aliases) flags.set(alias, { key, type });
  }
  const helpHint = () => `see ${options.self()}${options.command ? ` ${options.command}` : ""} --help`;
  const label = `cxagent${options.command ? ` ${options.command}` : ""}`;
  const out: Parsed = { _: [] };
  for (const [key, def] of Object.entries(args)) {
    if (def.type === "boolean") out[key] = typeof def.default === "boolean" ? def.default : undefined;
    else if (def.default !== undefined) out[key] = String(def.default);
  }
  const words: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "--") {
      words.push(...tokens.slice(i + 1));
      break;
    }
    if (!token.startsWith("-") || token === "-") {
      words.push(token);
      continue;
    }
    const long = token.startsWith("--");
    const eq = token.indexOf("=");
    const name = token.slice(long ? 2 : 1, eq < 0 ? undefined : eq);
    const inline = eq < 0 ? undefined : token.slice(eq + 1);
    let flag = flags.get(name);
    let negated = false;
    if (!flag && long && name.startsWith("no-") && flags.get(name.slice(3))?.type === "boolean") {
      flag = flags.get(name.slice(3));
      negated = true;
    }
    if (!flag || (!long && name.length !== 1)) {
      const known = [...flags.keys()].map((k) => (k.length === 1 ? `-${k}` : `--${k}`));
      const shown = eq < 0 ? token : token.slice(0, eq);
      throw new CxError("E_USAGE", `unknown option '${shown}' for '${label}'${didYouMean(shown, known)}`, { hint: helpHint() });
    }
    if (flag.type === "boolean") {
      const value = negated ? (inline === undefined ? false : undefined) : booleanValue(inline);
      if (value === undefined) throw new CxError("E_USAGE", `option '${token}' is a switch: give it alone, or as =true or =false`, { hint: helpHint() });
      out[flag.key] = value;
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = tokens[i + 1];
      if (next === undefined || (next.startsWith("-") && next !== "-" && !/^-\d/.test(next))) {
        throw new CxError("E_USAGE", `option '${token}' needs a value`, { hint: helpHint() });
      }
      value = next;
      i++;
    }
    out[flag.key] = value;
  }
  out._ = words;
  const last = positionals.length - 1;
  positionals.forEach((key, index) => {
    if (options.variadic && index === last) {
      const rest = words.slice(index);
      out[key] = rest.length ? rest.join(" ") : undefined;
    } else {
      out[key] = words[index];
    }
  });
  if (words.length > positionals.length && !(options.variadic && positionals.length)) {
    const extra = words[positionals.length]!;
    const expected = positionals.length ? positionals.map((p) => `<${p}>`).join(" ") : "no arguments";
    throw new CxError("E_USAGE", `unexpected argument '${extra}' for '${label}', which takes ${expected}`, { hint: helpHint() });
  }
  for (const key of positionals) {
    const def = args[key]!;
    if (def.required && (out[key] === undefined || out[key] === "") && !options.explainsMissing?.includes(key)) {
      throw new CxError("E_USAGE", `'${label}' needs <${key}>`, { hint: helpHint() });
    }
  }
  return out;
}
