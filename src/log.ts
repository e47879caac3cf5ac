/**
 * The one logger: consola bound to stderr, because stdout carries only results (SPEC §9).
 *
 * consola itself loads when something is first logged, not when a logger is made: loading it
 * (and the Intl.Segmenter it builds at once) cost every CLI start and every script importing the
 * library several ms of CPU, and most runs, `--json` ones above all, log nothing.
 */
import type { ConsolaInstance } from "consola";

export type Logger = ConsolaInstance;

type Consola = typeof import("consola");
let consola: Consola | undefined;
const loadConsola = () => (consola ??= require("consola") as Consola);

/**
 * A logger that makes its consola instance with `make` when a method is first called on it (or a
 * property read); withTag gives another such logger, so tagging loads nothing either.
 */
function lazyLogger(make: () => ConsolaInstance): Logger {
  let instance: ConsolaInstance | undefined;
  const real = () => (instance ??= make());
  return new Proxy({} as Logger, {
    get(_, key) {
      if (key === "withTag" && !instance) return (tag: string) => lazyLogger(() => real().withTag(tag));
      const target = real();
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_, key, value) {
      return Reflect.set(real(), key, value);
    },
  });
}

/** `level`, when given, is consola's number for the level (its LogLevels), and wins over verbose and quiet. */
export function createLogger(options: { verbose?: boolean; quiet?: boolean; level?: number } = {}): Logger {
  return lazyLogger(() => {
    const { createConsola, LogLevels } = loadConsola();
    return createConsola({
      level: options.level ?? (options.verbose ? LogLevels.debug : options.quiet ? LogLevels.error : LogLevels.info),
      stdout: process.stderr,
      stderr: process.stderr,
      formatOptions: { date: false, colors: colorWanted(process.stderr) },
    });
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
export const silentLogger: Logger = lazyLogger(() => {
  const { createConsola, LogLevels } = loadConsola();
  return createConsola({ level: LogLevels.silent, stdout: process.stderr, stderr: process.stderr });
});

/** Plugin log levels (SPEC §3.3) as words. */
export const LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "critical"] as const;
