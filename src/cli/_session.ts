/**
 * The session every CLI command runs in, wired to the terminal: logs and plugin output on stderr,
 * made inert and attributed to the plugin by name; the config and state folders from the global
 * flags; on a terminal, the trust prompt.
 */
import { createLogger, LEVEL_NAMES } from "../log.ts";
import { inertBlock } from "../inert.ts";
import { Session } from "../session/session.ts";
import type { GlobalOptions } from "./_args.ts";
import { isInteractive } from "./_prompt.ts";
import { trustPrompt } from "./_trust-prompt.ts";
import { resolveFolders } from "../discovery/paths.ts";

export async function openSession(options: GlobalOptions & { snapshotDir?: string }): Promise<Session> {
  const logger = createLogger({ verbose: options.verbose });
  return Session.open({
    cwd: options.cwd,
    configDir: options.configDir,
    stateDir: options.stateDir,
    snapshotDir: options.snapshotDir,
    source: "cli",
    logger,
    confirmTrust: isInteractive() ? trustPrompt(resolveFolders(options).stateDir) : null,
    // What a plugin writes and logs reaches the terminal inert, attributed to it by name.
    onOutput: options.verbose ? (plugin, line) => logger.withTag(plugin).log(inertBlock(line)) : () => {},
    onLog: (plugin, level, text) => {
      const method = level >= 4 ? "error" : level === 3 ? "warn" : level === 2 ? "info" : "debug";
      logger.withTag(plugin)[method](`${LEVEL_NAMES[level] ?? level}: ${inertBlock(text)}`);
    },
  });
}
