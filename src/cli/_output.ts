/**
 * What a command prints. stdout carries only the result; with --json it is exactly one JSON
 * document (SPEC §9). Everything else goes to stderr.
 */
import { CxError } from "../errors.ts";
import { inertBlock } from "../inert.ts";
import { colorWanted } from "../log.ts";
import { cliHint } from "./_hints.ts";
import { err, isTTY, out, stderrOutput } from "./_stdio.ts";

export interface CommandResult {
  /** The document printed with --json. */
  json: unknown;
  /** The text printed without --json (nothing when empty). */
  text?: string;
  exitCode?: number;
}

/**
 * Prints a result. `--json` is exact JSON. Text on a terminal is made inert (a tool's output, a
 * command's message and instructions are plugin text); text into a pipe or file is the exact
 * data, for the program that reads it — views like list and describe escape their plugin fields
 * themselves, wherever they go.
 */
export function printResult(result: CommandResult, json: boolean) {
  if (json && result.json !== undefined) out(JSON.stringify(result.json, null, 2) + "\n");
  else if (result.text) {
    const text = isTTY(1) ? inertBlock(result.text) : result.text;
    out(text.endsWith("\n") ? text : text + "\n");
  }
}

/** How a command prints: text for people, one JSON document (--json), or JSON lines (--jsonl). */
export type OutputMode = "text" | "json" | "jsonl";

/** The JSON of an error as the CLI prints it: its `hint` is the CLI's wording of its next step. */
export function errorJson(error: CxError) {
  return { ...error.toJSON(), hint: cliHint(error) ?? null };
}

/**
 * Prints a failure: with --json one document (`{"error": …}`, or the command's own shape, such as
 * invoke's envelope), with --jsonl the same as one line, else `error …` and its hint on stderr.
 */
export function printError(error: CxError, mode: OutputMode, document: (error: CxError) => unknown = (e) => ({ error: errorJson(e) })) {
  if (mode !== "text") {
    out(JSON.stringify(document(error), null, mode === "json" ? 2 : undefined) + "\n");
    return;
  }
  const hint = cliHint(error);
  const red = useColor() ? (s: string) => `\x1b[31m${s}\x1b[39m` : (s: string) => s;
  const dim = useColor() ? (s: string) => `\x1b[2m${s}\x1b[22m` : (s: string) => s;
  // Messages quote plugin text (its error, its stderr tail): inert, whatever stderr is.
  err(`${red("error")} ${inertBlock(error.message)}\n`);
  if (hint) err(dim(`hint: ${inertBlock(hint)}`) + "\n");
}

export function useColor(stream: { isTTY?: boolean } = stderrOutput): boolean {
  return colorWanted(stream);
}

export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

/** Multi-line text made inert, its later lines indented so that none can pass for a line of ours. */
export function indentBlock(text: string, indent: string): string {
  return inertBlock(text).split("\n").join(`\n${indent}`);
}
