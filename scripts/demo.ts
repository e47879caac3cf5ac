#!/usr/bin/env bun
/**
 * The main job, as a user would run it: build the example plugins, then drive the calculator
 * through the CLI — describe it, and call each of its tools — then the other examples (the Rust
 * ones, one of them a Cortex native plugin, only where cargo is on PATH). Every command is printed before it runs. State (approvals, grants) goes to a throwaway folder, so nothing of yours is touched.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { colorWanted } from "../src/log.ts";
import { findCargo } from "./_cargo.ts";

// Emphasis only where it shows: on a terminal, or with FORCE_COLOR; never with NO_COLOR.
const styled = colorWanted(process.stdout);
const bold = (text: string) => (styled ? `\x1b[1m${text}\x1b[0m` : text);
const red = (text: string) => (styled ? `\x1b[31m${text}\x1b[0m` : text);

const root = join(import.meta.dir, "..");
// In the home, not the shared temporary folder: module plugins' snapshots go under the state
// folder (without a private $XDG_RUNTIME_DIR), and cxagent refuses one another user could write above.
const state = mkdtempSync(join(homedir(), ".cxagent-demo-"));
const env = { ...process.env, CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(state, "config") };
let failures = 0;

function step(title: string, args: string[], expectCode = 0) {
  const shown = args.map((a) => (/[\s{}"']/.test(a) ? `'${a}'` : a)).join(" ");
  console.log(`\n${bold(`# ${title}`)}\n$ ${args[0] === "__build" ? "npm run examples" : `cxagent ${shown}`}`);
  const cmd = args[0] === "__build" ? [process.execPath, "scripts/build-native.ts", "examples"] : [process.execPath, "src/main.ts", ...args];
  const proc = Bun.spawnSync(cmd, { cwd: root, env, stdout: "inherit", stderr: "inherit", stdin: "ignore" });
  if (proc.exitCode !== expectCode) {
    console.log(red(`(exit code ${proc.exitCode}, expected ${expectCode})`));
    failures++;
  }
}

try {
  step("build the example plugins", ["__build"]);
  step("what the calculator declares, and the hash of its files (none of its code runs)", ["describe", "examples/calculator"]);
  // Nothing runs before a person approves those exact files: on a terminal `cxagent approve`
  // asks; here, with no one to ask, the hash just shown is pinned instead.
  const described = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/calculator", "--json"], { cwd: root, env });
  const hash = JSON.parse(described.stdout.toString()).hash as string;
  step("approve exactly those files", ["approve", "examples/calculator", "--hash", hash]);
  step("multiply: never asks for permission", ["invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 6, "b": 7}']);
  step("add: gated, so without a terminal to ask on it needs --allow", ["invoke", "examples/calculator", "calc_add", "--args", '{"a": 2, "b": 3}', "--allow"]);
  step("divide: asks only when the divisor is zero", ["invoke", "examples/calculator", "calc_divide", "--args", '{"a": 1, "b": 3}']);
  step("the same call as JSON, for pipelines", ["invoke", "examples/calculator", "calc_divide", "--args", '{"a": 22, "b": 7}', "--json"]);
  const reporter = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/reporter", "--json"], { cwd: root, env });
  step("approve the reporter example", ["approve", "examples/reporter", "--hash", JSON.parse(reporter.stdout.toString()).hash]);
  step("a call that reports while it runs: each report a JSON line, then the result", ["invoke", "examples/reporter", "reporter_count", "--args", '{"to": 5, "delayMs": 100}', "--jsonl"]);
  const spawner = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/spawner", "--json"], { cwd: root, env });
  step("approve the spawner example", ["approve", "examples/spawner", "--hash", JSON.parse(spawner.stdout.toString()).hash]);
  step("a plugin with a helper process of its own, registered so it never outlives the session", ["invoke", "examples/spawner", "spawner_ping", "--args", '{"text": "hello, helper"}']);
  const scheduler = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/scheduler", "--json"], { cwd: root, env });
  step("approve the scheduler example", ["approve", "examples/scheduler", "--hash", JSON.parse(scheduler.stdout.toString()).hash]);
  step("a plugin that starts work on its own: a command sets a reminder, poll hands it back", ["watch", "examples/scheduler", "--command", "remind in 1s run the tests", "--count", "1", "--for", "5000"]);
  if (findCargo()) {
    const wordcount = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/wordcount", "--json"], { cwd: root, env });
    step("approve the Rust example", ["approve", "examples/wordcount", "--hash", JSON.parse(wordcount.stdout.toString()).hash]);
    step("a plugin in Rust with no crates: count the words of a file in the project", ["invoke", "examples/wordcount", "wordcount_file", "--args", '{"path": "README.md"}']);
    step("its gate asks only for a path outside the project", ["gate", "examples/wordcount", "wordcount_file", "--args", '{"path": "/etc/hosts"}']);
    step("a Cortex native plugin (cortex_plugin_init): what its manifest.toml says, before it runs", ["describe", "examples/cortex-wordcount"]);
    const cortex = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/cortex-wordcount", "--json"], { cwd: root, env });
    step("approve the Cortex example", ["approve", "examples/cortex-wordcount", "--hash", JSON.parse(cortex.stdout.toString()).hash]);
    step("its tools, declared only by its running code", ["describe", "examples/cortex-wordcount", "--live"]);
    step("a call, through the same plugin host", ["invoke", "examples/cortex-wordcount", "word_count", "--args", '{"text": "one two three"}']);
  } else {
    console.log(`\n${bold("# the Rust examples, examples/wordcount and examples/cortex-wordcount, are skipped: cargo is not on PATH")}`);
  }
  const calculatorTs = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/calculator-ts", "--json"], { cwd: root, env });
  step("approve the calculator in TypeScript", ["approve", "examples/calculator-ts", "--hash", JSON.parse(calculatorTs.stdout.toString()).hash]);
  step("the same calculator as a TypeScript plugin, nothing built: the same answer", ["invoke", "examples/calculator-ts", "calc_divide", "--args", '{"a": 22, "b": 7}', "--json"]);
  step("a Cortex process plugin (a shell script, one process per call): its tools from manifest.toml, before anything runs", ["describe", "examples/cortex-process"]);
  const shellTools = Bun.spawnSync([process.execPath, "src/main.ts", "describe", "examples/cortex-process", "--json"], { cwd: root, env });
  step("approve the Cortex process example", ["approve", "examples/cortex-process", "--hash", JSON.parse(shellTools.stdout.toString()).hash]);
  step("a call: its command runs once, in a group of its own, with only PATH in its environment", ["invoke", "examples/cortex-process", "shell_word_count", "--args", '{"text": "one two three"}']);
  step("nothing is left behind to reap", ["reap"]);
} finally {
  rmSync(state, { recursive: true, force: true });
}
console.log(failures ? `\n${failures} step(s) did not go as expected` : "\nall steps done");
process.exit(failures ? 1 : 0);
