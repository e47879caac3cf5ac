#!/usr/bin/env bun
/**
 * Proves that every safety guard has a test that fails without it. For each entry of
 * scripts/guards.list.ts, in a scratch copy of the repository: remove the guard (one textual
 * change), rebuild the native parts if it is in C, run the test files that should catch it, put
 * the guard back. A guard whose tests still pass "survived": the suite would not notice losing it.
 *
 * Usage: bun scripts/guards.ts [--only ID,ID] [--list] [--keep]
 *   --only   check these guards only
 *   --list   print the guards and exit
 *   --keep   leave the scratch copy for inspection
 *
 * Exit 0: every guard caught. 1: some survived, or a removal did not build. 2: the list no longer
 * matches the code (a `find` occurs zero or several times), or the unchanged copy fails its tests.
 * It takes minutes, so it is not part of `npm test`: run it (`npm run guards`) before resolving an
 * issue that touches trust, gating, reaping or the protocol.
 */
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { type Guard, GUARDS } from "./guards.list.ts";

const root = join(import.meta.dir, "..");
const bun = process.execPath;
/** A test run that takes longer than this is ended and counted as caught (every test has its own deadline). */
const RUN_LIMIT_MS = 5 * 60_000;
/** Not copied: installed, built for release, or written by test runs. */
const NOT_COPIED = new Set(["node_modules", ".git", "dist", ".bench", "junit.xml"]);
/**
 * Not copied either, so they are built afresh in the scratch copy (a few seconds): some fixtures
 * are linked with an absolute RPATH into this tree, which a copy would still point back to.
 */
const REBUILT = new Set(["test/fixtures/build"]);

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(name);
const value = (name: string) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
for (const [i, arg] of argv.entries()) {
  if (arg.startsWith("--") && !["--only", "--list", "--keep"].includes(arg)) usage(`unknown option ${arg}`);
  if (!arg.startsWith("--") && argv[i - 1] !== "--only") usage(`unexpected argument ${arg}`);
}

function usage(problem: string): never {
  console.error(`guards: ${problem}\nusage: bun scripts/guards.ts [--only ID,ID] [--list] [--keep]`);
  process.exit(2);
}

function count(text: string, find: string): number {
  let n = 0;
  for (let at = text.indexOf(find); at >= 0; at = text.indexOf(find, at + 1)) n++;
  return n;
}

// 1. The list must still describe the code: each `find` exactly once, each test file present
//    (with --only, for the guards named: an entry elsewhere that went stale does not stop them).
const problems: string[] = [];
const seen = new Set<string>();
const named = value("--only")?.split(",").filter(Boolean);
for (const g of GUARDS) {
  if (seen.has(g.id)) problems.push(`${g.id}: this id is used twice`);
  seen.add(g.id);
  if (named && !named.includes(g.id)) continue;
  const file = join(root, g.file);
  if (!existsSync(file)) {
    problems.push(`${g.id}: ${g.file} does not exist`);
    continue;
  }
  const n = count(readFileSync(file, "utf8"), g.find);
  if (n !== 1) problems.push(`${g.id}: its find text occurs ${n === 0 ? "nowhere" : `${n} times`} in ${g.file}: ${JSON.stringify(g.find)}`);
  if (g.find === g.replace) problems.push(`${g.id}: find and replace are the same`);
  if (g.tests.length === 0) problems.push(`${g.id}: no test files are named`);
  for (const t of g.tests) if (!existsSync(join(root, t))) problems.push(`${g.id}: the test file ${t} does not exist`);
}
if (problems.length) {
  console.error(`guards: scripts/guards.list.ts no longer matches the code; update these entries:\n${problems.map((p) => `  ${p}`).join("\n")}`);
  process.exit(2);
}

if (flag("--only") && !value("--only")) usage("--only needs a comma-separated list of guard ids");
const only = value("--only")?.split(",").filter(Boolean);
for (const id of only ?? []) if (!seen.has(id)) usage(`--only names '${id}', which is not in scripts/guards.list.ts`);
const selected = only ? GUARDS.filter((g) => only.includes(g.id)) : GUARDS;
const width = Math.max(...selected.map((g) => g.id.length));

if (flag("--list")) {
  for (const g of selected) console.log(`${g.id.padEnd(width)}  ${g.area.padEnd(8)}  ${g.file}\n${"".padEnd(width)}  ${g.why}`);
  process.exit(0);
}

// 2. A scratch copy of the working tree as it is now (committed or not), sharing node_modules.
const scratch = mkdtempSync(join(tmpdir(), "cxagent-guards-"));
chmodSync(scratch, 0o755); // as the tree itself is: some tests run the CLI from it as user nobody
let running: ReturnType<typeof Bun.spawn> | null = null;
const cleanUp = () => {
  if (!flag("--keep")) rmSync(scratch, { recursive: true, force: true });
};
process.on("SIGINT", () => {
  running?.kill("SIGKILL");
  cleanUp();
  process.exit(130);
});
cpSync(root, scratch, {
  recursive: true,
  preserveTimestamps: true, // so the native build sees what is already built
  filter: (source) => {
    const path = relative(root, source);
    return !NOT_COPIED.has(path.split(sep)[0]!) && !REBUILT.has(path.split(sep).join("/")) && !path.endsWith(".log");
  },
});
symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"));

interface Run {
  code: number | null;
  output: string;
  timedOut: boolean;
}

async function run(cmd: string[]): Promise<Run> {
  const proc = Bun.spawn(cmd, { cwd: scratch, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  running = proc;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, RUN_LIMIT_MS);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  running = null;
  return { code, output: stdout + stderr, timedOut };
}

const build = () => run([bun, "scripts/build-native.ts", "all"]);
const runTests = (files: string[], bail: boolean) => run([bun, "test", "--timeout", "60000", ...(bail ? ["--bail"] : []), ...files]);
const isNative = (file: string) => file.endsWith(".c") || file.endsWith(".h");
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;
const tail = (text: string) => text.trim().split("\n").slice(-20).map((l) => `  | ${l}`).join("\n");

function fail(message: string, output?: string): never {
  console.error(`guards: ${message}${output ? `\n${tail(output)}` : ""}`);
  cleanUp();
  process.exit(2);
}

const began = performance.now();
console.log(`guards: ${selected.length} of ${GUARDS.length} guards, in a scratch copy at ${scratch}`);

// 3. The unchanged copy must build and pass, or no result below would mean anything.
const built = await build();
if (built.code !== 0) fail("the native parts do not build in the scratch copy", built.output);
const files = [...new Set(selected.flatMap((g) => g.tests))].sort();
const baselineAt = performance.now();
const baseline = await runTests(files, false);
if (baseline.code !== 0) fail(`the unchanged copy fails its tests (${files.join(" ")}); fix that first`, baseline.output);
console.log(`baseline: ${files.length} test files pass unchanged (${seconds(baselineAt)})`);

// 4. One guard at a time.
type Outcome = "caught" | "SURVIVED" | "NO BUILD";
const results: { guard: Guard; outcome: Outcome }[] = [];
for (const guard of selected) {
  const path = join(scratch, guard.file);
  const original = readFileSync(path, "utf8");
  const at = performance.now();
  let outcome: Outcome;
  let detail: string;
  writeFileSync(path, original.replace(guard.find, () => guard.replace));
  try {
    const rebuilt = isNative(guard.file) ? await build() : null;
    if (rebuilt && rebuilt.code !== 0) {
      outcome = "NO BUILD";
      detail = `the removal does not compile; fix its entry\n${tail(rebuilt.output)}`;
    } else {
      const r = await runTests(guard.tests, true);
      const failed = /^\(fail\) (.*?)(?: \[[\d.]+m?s\])?$/m.exec(r.output)?.[1];
      outcome = r.code === 0 ? "SURVIVED" : "caught";
      detail = r.code === 0 ? `${guard.why}; still passing: ${guard.tests.join(" ")}` : r.timedOut ? `the tests ran past ${RUN_LIMIT_MS / 60_000} min and were ended` : `by: ${failed ?? `exit code ${r.code}`}`;
    }
  } finally {
    writeFileSync(path, original);
    if (isNative(guard.file)) {
      const restored = await build();
      if (restored.code !== 0) fail(`the native parts do not build after restoring ${guard.file}`, restored.output);
    }
  }
  results.push({ guard, outcome });
  console.log(`${outcome.padEnd(8)}  ${guard.id.padEnd(width)}  ${seconds(at).padStart(7)}  ${detail}`);
}

// 5. The verdict.
const survivors = results.filter((r) => r.outcome === "SURVIVED").map((r) => r.guard.id);
const unbuilt = results.filter((r) => r.outcome === "NO BUILD").map((r) => r.guard.id);
const caught = results.length - survivors.length - unbuilt.length;
const minutes = (performance.now() - began) / 60_000;
console.log(
  `\n${results.length} guards: ${caught} caught, ${survivors.length} survived${survivors.length ? ` (${survivors.join(", ")})` : ""}` +
    `${unbuilt.length ? `, ${unbuilt.length} did not build (${unbuilt.join(", ")})` : ""}; ${minutes.toFixed(1)} min`,
);
cleanUp();
process.exit(survivors.length || unbuilt.length ? 1 : 0);
