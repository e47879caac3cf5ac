/**
 * What the sandbox launcher is handed and says (issue 39), apart from the manifest's schema
 * (sandbox.ts) so that the launcher, which starts before every plugin host, loads no validator.
 */
/**
 * The layers a sandboxed plugin host can be under, by the names `describe`, `load --json`,
 * `cxagent paths` and each MCP call's `_meta` report, and that config.json's `sandboxAccepts`
 * names to accept one missing for a plugin.
 */
export const SANDBOX_LAYERS = ["no_new_privs", "landlock", "landlock-net", "seccomp", "rlimits", "netns", "pids"] as const;
export type SandboxLayer = (typeof SANDBOX_LAYERS)[number];

/**
 * What the launcher (`cxagent __sandbox`) is handed: the declaration with its placeholders
 * resolved, except ${tmp}, which the launcher makes per host under `tmpBase`.
 */
export interface SandboxPolicy {
  /** The plugin's name, for messages. */
  plugin: string;
  read: string[];
  write: string[];
  /**
   * Files and folders whose programs it may run, besides the runtime's own (runtime-files.ts):
   * a Cortex process plugin's commands, run from its snapshot (plugin-host/process-sandbox.ts).
   */
  execute?: string[];
  net: "none" | "any" | { connect: { port: number }[]; bind: { port: number }[] };
  processes?: number;
  memoryMiB?: number;
  openFiles?: number;
  /** Where the launcher makes the host's ${tmp} (`<tmpBase>/sandbox-<pid>`), a private folder. */
  tmpBase: string;
  /** Layers the user accepts missing for this plugin (config.json `sandboxAccepts`). */
  accepts: SandboxLayer[];
}

/** The exit code of a launcher that refused to start the host (a layer could not be applied). */
export const SANDBOX_REFUSED_EXIT = 78;
/** The prefix of the launcher's one stderr line saying why it refused. */
export const SANDBOX_REFUSED_LINE = "cxagent-sandbox-refused: ";

/** What the runtime (host/) is told of a sandboxed host: the layers applied, and what a limit did once it ended. */
export interface HostSandbox {
  layers: SandboxLayer[];
  /** The whole command that starts the host with these host arguments (the launcher's plan depends on them); without it, `hostCommand` followed by them. */
  commandFor?(args: readonly string[]): string[];
  /** Once the host `pid` is ready (the rlimits are in force): what the limits' verdict needs of it. */
  started?(pid: number): void;
  /** After the host `pid` ended: cleans up; the limit that stopped it, if one did ({limit: "memory", value: "512 MiB"}), and how that is known. */
  ended(pid: number, exit: { code: number | null; signal: string | null }, stderr: readonly string[]): { limit: string; value: string; how?: string } | null;
}
