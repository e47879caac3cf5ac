/**
 * The one logger: consola bound to stderr, because stdout carries only results (SPEC §9).
 */
import { createConsola, type ConsolaInstance, LogLevels } from "consola";

export type Logger = ConsolaInstance;

export function createLogger(options: { verbose?: boolean; quiet?: boolean } = {}): Logger {
  return createConsola({
    level: options.verbose ? LogLevels.debug : options.quiet ? LogLevels.error : LogLevels.info,
    stdout: process.stderr,
    stderr: process.stderr,
    formatOptions: { date: false, colors: colorWanted(process.stderr) },
  });
}

/**
 * Whether to colour what goes to `stream`: FORCE_COLOR (anything but 0 or false) forces it,
 * NO_COLOR (any value) turns it off, otherwise only on a terminal.
 */
export function colorWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !["0", "false"].includes(force.toLowerCase());
  if (env.NO_COLOR) return false;
  return stream.isTTY === true;
}

/** A logger that says nothing: the default for library sessions that were not given one. */
export const silentLogger: Logger = createConsola({ level: LogLevels.silent, stdout: process.stderr, stderr: process.stderr });

/** Plugin log levels (SPEC §3.3) as words. */
export const LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "critical"] as const;
