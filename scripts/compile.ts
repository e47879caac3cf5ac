#!/usr/bin/env bun
/**
 * Builds the single executable dist/cxagent with `bun build --compile`. The native shim is built
 * first and embedded, so the binary needs no C compiler and no C headers where it runs.
 */
import { join } from "node:path";
import { neededBy } from "../src/trust/loader.ts";

const root = join(import.meta.dir, "..");
const run = (cmd: string[]) => {
  const proc = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (proc.exitCode !== 0) {
    console.error(`compile: failed: ${cmd.join(" ")}`);
    process.exit(proc.exitCode ?? 1);
  }
};

run([process.execPath, "scripts/build-native.ts", "shim"]);
// The binary's own DT_NEEDED, which src/trust/loader.ts would otherwise read from the binary at
// every plugin load: the same as the Bun it is built on, checked against the result below.
const executableNeeds = neededBy(process.execPath);
// --splitting: each dynamic import becomes a chunk of its own inside the executable, loaded only
// when reached. src/main.ts imports the plugin host or the CLI that way, so a plugin host no
// longer loads the CLI's code and dependencies (node:fs among them) to start. `cxagent __host`
// with the noop plugin, 30 paired runs: CPU 20 -> 9 ms (median ratio 0.42), peak RSS 43.6 -> 33.8
// MiB; `--version` 22 -> 16 ms CPU.
run([
  process.execPath, "build", "--compile",
  "src/main.ts",
  "--outfile", "dist/cxagent",
  // A plugin host started in someone's project must not pick up that project's .env or bunfig.toml.
  "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig",
  // A module plugin's packages (node_modules in its folder) resolve by their package.json, as under `bun run`.
  "--compile-autoload-package-json",
  "--minify", "--bytecode", "--format=esm", "--splitting",
  "--define", `CXAGENT_EXECUTABLE_NEEDS=${JSON.stringify(executableNeeds)}`,
]);
const built = neededBy(join(root, "dist/cxagent"));
if (JSON.stringify(built) !== JSON.stringify(executableNeeds)) {
  console.error(`compile: dist/cxagent needs ${built.join(", ")}, not ${executableNeeds.join(", ")} as the Bun it was built on: it was built on another executable; build it with the Bun that runs this script`);
  process.exit(1);
}
