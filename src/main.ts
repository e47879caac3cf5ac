#!/usr/bin/env bun
/**
 * The cxagent executable. `__host` (the plugin host a parent spawns) is dispatched before the CLI
 * and its dependencies load, so a plugin host starts as fast as Bun can; everything else is the
 * CLI. The two halves share nothing but protocol/: neither imports the other.
 *
 * For `invoke`, which loads one plugin and ends, a plugin host is started first, before the CLI
 * loads (host/prepared.ts): it starts while the CLI reads the plugin and settles trust, and gets
 * the approved bytes only after that.
 */
const argv = process.argv.slice(2);
if (argv[0] === "__sandbox") {
  // The launcher of a sandboxed plugin host (src/sandbox/launch.ts): it confines itself, then execve's the host.
  const { runLauncher } = await import("./sandbox/launch.ts");
  runLauncher(argv.slice(1));
} else if (argv[0] === "__host") {
  const { runPluginHost } = await import("./plugin-host/main.ts");
  await runPluginHost(argv.slice(1));
} else {
  if (argv[0] === "mcp" && process.env.CXAGENT_IDLE_RUNTIME !== "0") {
    // Before the CLI loads: the server starts itself again with an idle-quiet runtime (cli/_idle-runtime.ts).
    const [{ idleRestart }, { isCompiled }] = await Promise.all([import("./cli/_idle-runtime.ts"), import("./session/host-command.ts")]);
    const restart = idleRestart(argv, isCompiled());
    // Returns only when execve failed (or, where libc.so.6 cannot be opened, throws): the server then runs as it is.
    if (restart) await import("./sandbox/kernel.ts").then((k) => k.execve(restart.argv[0]!, restart.argv, restart.env)).catch(() => {});
  }
  const prepare = argv[0] === "invoke" && !argv.some((a) => a === "--help" || a === "-h") && process.env.CXAGENT_PREPARE_HOST !== "0";
  const prepared = prepare ? await import("./host/prepared.ts") : null;
  if (prepared) {
    const [{ hostCommand }, { pluginHostEnv }] = await Promise.all([import("./session/host-command.ts"), import("./session/host-env.ts")]);
    prepared.prepareHost(hostCommand(), pluginHostEnv(process.env));
  }
  const { main } = await import("./cli/run.ts");
  process.exitCode = await main(argv);
  prepared?.discardPrepared();
}
