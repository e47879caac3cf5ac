/**
 * The session every CLI command runs in, wired to the terminal: logs and plugin output on stderr,
 * the config and state folders from the global flags.
 */
import { createLogger } from "../log.ts";
import { Session } from "../host/session.ts";
import type { GlobalOptions } from "./_args.ts";

export async function openSession(options: GlobalOptions): Promise<Session> {
  const logger = createLogger({ verbose: options.verbose });
  return Session.open({
    cwd: options.cwd,
    configDir: options.configDir,
    stateDir: options.stateDir,
    logger,
    onOutput: options.verbose ? (plugin, line) => logger.withTag(plugin).log(line) : () => {},
  });
}
