/**
 * The session every CLI command runs in, wired to the terminal: logs and plugin output on stderr,
 * the config and state folders from the global flags.
 */
import { createLogger, LEVEL_NAMES } from "../log.ts";
import { inertBlock } from "../inert.ts";
import { Session } from "../host/session.ts";
import type { GlobalOptions } from "./_args.ts";

export async function openSession(options: GlobalOptions): Promise<Session> {
  const logger = createLogger({ verbose: options.verbose });
  return Session.open({
    cwd: options.cwd,
    configDir: options.configDir,
    stateDir: options.stateDir,
    logger,
    // What a plugin writes and logs reaches the terminal inert, attributed to it by name.
    onOutput: options.verbose ? (plugin, line) => logger.withTag(plugin).log(inertBlock(line)) : () => {},
    onLog: (plugin, level, text) => {
      const method = level >= 4 ? "error" : level === 3 ? "warn" : level === 2 ? "info" : "debug";
      logger.withTag(plugin)[method](`${LEVEL_NAMES[level] ?? level}: ${inertBlock(text)}`);
    },
  });
}
