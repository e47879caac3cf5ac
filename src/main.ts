#!/usr/bin/env bun
/**
 * The cxagent executable. `__host` (the plugin host a parent spawns) is dispatched before the CLI
 * and its dependencies load, so a plugin host starts as fast as Bun can; everything else is the
 * CLI. The two halves share nothing but protocol/: neither imports the other.
 */
const argv = process.argv.slice(2);
if (argv[0] === "__host") {
  const { runPluginHost } = await import("./plugin-host/main.ts");
  await runPluginHost(argv.slice(1));
} else {
  const { main } = await import("./cli/run.ts");
  process.exitCode = await main(argv);
}
