/**
 * What a command prints. stdout carries only the result; with --json it is exactly one JSON
 * document (SPEC §9). Everything else goes to stderr.
 */
import { CxError } from "../errors.ts";

export interface CommandResult {
  /** The document printed with --json. */
  json: unknown;
  /** The text printed without --json (nothing when empty). */
  text?: string;
  exitCode?: number;
}

export function printResult(result: CommandResult, json: boolean) {
  if (json && result.json !== undefined) process.stdout.write(JSON.stringify(result.json, null, 2) + "\n");
  else if (result.text) process.stdout.write(result.text.endsWith("\n") ? result.text : result.text + "\n");
}

export function printError(error: CxError, json: boolean) {
  if (json) {
    process.stdout.write(JSON.stringify({ error: error.toJSON() }, null, 2) + "\n");
    return;
  }
  const red = useColor() ? (s: string) => `\x1b[31m${s}\x1b[39m` : (s: string) => s;
  const dim = useColor() ? (s: string) => `\x1b[2m${s}\x1b[22m` : (s: string) => s;
  process.stderr.write(`${red("error")} ${error.message}\n`);
  if (error.hint) process.stderr.write(dim(`hint: ${error.hint}`) + "\n");
}

export function useColor(stream: NodeJS.WriteStream = process.stderr): boolean {
  return !process.env.NO_COLOR && stream.isTTY === true;
}

export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}
