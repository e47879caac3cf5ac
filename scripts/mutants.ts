#!/usr/bin/env bun
/**
 * Mutation testing of the files that guard trust, permission, selection, reaping, module loading,
 * MCP and state (issue 37): StrykerJS makes the mutants from its operators (a comparison made
 * weaker, a condition forced true or false, a string emptied, a block removed, ...), not from a
 * list written by the people who wrote the tests, drops those that do not compile (its TypeScript
 * checker), and runs each file's own tests (scripts/mutants.table.ts) against each of the rest
 * (its command test runner: `bun test <those files>`). A mutant no test kills survives.
 *
 * A survivor gets a test that kills it, or an entry in test/mutants-accepted.json with the reason
 * no test can observe it (an equivalent mutant, a message's wording, a speed-up): matched by
 * operator, original text and replacement (and the text of its line, where given), not by line
 * number, so entries outlive edits around them.
 *
 * Usage: bun scripts/mutants.ts [--only FILE,FILE] [--concurrency N] [--list] [--rescore]
 *   --only         these files of the table only (src/inert.ts, ...)
 *   --concurrency  test runs at once (1: the suite's own tests share the machine's CPUs badly)
 *   --list         print the table and exit
 *   --rescore      run nothing: score the last run's reports in .mutants/ against the accepted list
 *
 * Prints, per file: mutants, killed, survived (accepted or not), the score without and with the
 * accepted ones. Exit 0: every survivor is accepted and every score is at least 90 %. 1: not so.
 * 2: a bad argument, or Stryker itself failed (its initial run of the tests, say). Stryker's own
 * output goes to stderr; its JSON reports to .mutants/. Minutes per file (the integration ones
 * run real plugin hosts per mutant), so not part of `npm test`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MUTANT_TARGETS } from "./mutants.table.ts";

const root = join(import.meta.dir, "..");
const argv = process.argv.slice(2);
const value = (name: string) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const usage = (problem: string): never => {
  console.error(`mutants: ${problem}\nusage: bun scripts/mutants.ts [--only FILE,FILE] [--concurrency N] [--list] [--rescore]`);
  process.exit(2);
};
for (const [i, arg] of argv.entries()) {
  if (arg.startsWith("--") && !["--only", "--concurrency", "--list", "--rescore"].includes(arg)) usage(`unknown option ${arg}`);
  if (!arg.startsWith("--") && !["--only", "--concurrency"].includes(argv[i - 1] ?? "")) usage(`unexpected argument ${arg}`);
}
const only = value("--only")?.split(",").filter(Boolean);
for (const file of only ?? []) if (!MUTANT_TARGETS[file]) usage(`${file} is not in scripts/mutants.table.ts (${Object.keys(MUTANT_TARGETS).join(", ")})`);
const concurrency = Number(value("--concurrency") ?? 1);
if (!Number.isInteger(concurrency) || concurrency < 1) usage("--concurrency needs a whole number of at least 1");
const files = only ?? Object.keys(MUTANT_TARGETS);

if (argv.includes("--list")) {
  for (const file of files) console.log(`${file}  ←  ${MUTANT_TARGETS[file]!.tests.join(" ")}${MUTANT_TARGETS[file]!.fixtures ? "  (builds the fixtures)" : ""}`);
  process.exit(0);
}

interface Accepted {
  mutator: string;
  original: string;
  replacement: string;
  /** The whole source line the mutant is on, trimmed: where the same text occurs more than once. */
  line?: string;
  reason: string;
}
const ACCEPTED_PATH = join(root, "test/mutants-accepted.json");
const accepted = JSON.parse(readFileSync(ACCEPTED_PATH, "utf8")) as Record<string, Accepted[]>;

interface ReportMutant {
  mutatorName: string;
  replacement: string;
  status: "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

/** The source text a mutant replaced (its location is 1-based lines, 0-based columns... or 1-based: both are read). */
function originalOf(source: string, m: ReportMutant): string {
  const lines = source.split("\n");
  const { start, end } = m.location;
  const offset = (p: { line: number; column: number }) => lines.slice(0, p.line - 1).reduce((n, l) => n + l.length + 1, 0) + p.column - 1;
  return source.slice(offset(start), offset(end));
}

/** Ends the processes still running from Stryker's sandbox (their command line names it), by pid. */
function endLeftInSandbox(): void {
  const sandbox = join(root, ".stryker-tmp", "sandbox-");
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (args.some((a) => a.startsWith(sandbox)) && !args.some((a) => a.includes("@stryker-mutator"))) {
        console.error(`mutants: ending process ${pid} left by a test in Stryker's sandbox (${args.join(" ").trim()})`);
        process.kill(Number(pid), "SIGKILL");
      }
    } catch {
      // gone meanwhile
    }
  }
}

const out = join(root, ".mutants");
mkdirSync(out, { recursive: true });
const bun = process.execPath;
const results: { file: string; total: number; ignored: number; killed: number; survived: string[]; acceptedCount: number; unexplained: string[]; seconds: number }[] = [];
let failed = false;
const strykerFailed: string[] = [];

for (const file of files) {
  const target = MUTANT_TARGETS[file]!;
  for (const t of target.tests) if (!existsSync(join(root, t))) usage(`${file}: its test file ${t} does not exist`);
  const slug = file.replace(/[^A-Za-z0-9]+/g, "-");
  const report = join(out, `${slug}.json`);
  const config = {
    testRunner: "command",
    // One bun test per file, in the table's order (-t applies to a whole run): given several files,
    // Bun runs test/integration/ before test/unit/ whatever their order, so a mutant the unit test
    // kills in a second first sat through the integration tests.
    commandRunner: {
      command: target.tests
        .map((t) => (target.only?.[t] ? `${t} -t '${target.only[t]}'` : t))
        // --bail, and && between the runs: a mutant is killed at its first failing test, the fast files first
        .map((args) => `${bun} test --bail --timeout 60000 ${args}`)
        .join(" && "),
    },
    mutate: [file],
    coverageAnalysis: "off",
    // A mutant whose tests outlast 1.5 × the first run's time plus this counts as killed (it hangs
    // them). Stryker's 5 s made a surviving mutant's merely slow run on a loaded machine a "kill":
    // 13 of files.ts's 78 mutants timed out so, most of them ones no hang could come from.
    timeoutMS: 20000,
    concurrency,
    checkers: ["typescript"],
    // src only: a mutant is checked against the program it is part of, not the tests that call it
    tsconfigFile: "tsconfig.mutants.json",
    typescriptChecker: { prioritizePerformanceOverAccuracy: true },
    // Bun does not type-check what it runs, and a "// @ts-nocheck" Stryker would add to every source
    // file changes the bytes some tests fingerprint (test/unit/checked-schemas.test.ts).
    disableTypeChecks: false,
    reporters: ["json", "clear-text", "progress-append-only"],
    clearTextReporter: { allowColor: false, logTests: false },
    jsonReporter: { fileName: report },
    tempDirName: ".stryker-tmp",
    cleanTempDir: true,
    // The compiled fixtures are built afresh in the sandbox where the tests load them: some are
    // linked with absolute paths into the tree they were built in.
    ignorePatterns: [".mutants", ".bench", "dist", "target", "junit.xml", "*.log", ...(target.fixtures ? ["test/fixtures/build"] : [])],
    ...(target.fixtures ? { buildCommand: `${bun} scripts/build-native.ts all` } : {}),
  };
  let seconds = 0;
  if (argv.includes("--rescore")) {
    if (!existsSync(report)) {
      console.error(`mutants: ${file} has no report in .mutants/ to score; run it first`);
      continue;
    }
  } else {
    rmSync(report, { force: true }); // a failed run must not be scored by the last one's report
    const configPath = join(out, `stryker.${slug}.json`);
    writeFileSync(configPath, JSON.stringify(config, null, 2) + "\n");
    console.error(`mutants: ${file} ← ${target.tests.join(" ")}`);
    const began = performance.now();
    // Stryker runs on Bun here: it asks for Node ≥ 22, and Bun reports a Node version above that.
    const proc = Bun.spawn([bun, join(root, "node_modules/@stryker-mutator/core/bin/stryker.js"), "run", configPath], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    });
    let reaper: Timer | undefined;
    for await (const chunk of proc.stdout) {
      process.stderr.write(chunk); // Stryker's report: stderr, not stdout
      // A test Stryker stopped at its timeout can leave a child of its own (a lock holder, say)
      // with Stryker's pipe open, and Stryker waits for it after its report: end those.
      const text = new TextDecoder().decode(chunk);
      if (!reaper && text.includes("MutationTestExecutor") && text.includes("Done in")) {
        reaper = setTimeout(() => endLeftInSandbox(), 10_000);
      }
    }
    clearTimeout(reaper);
    const code = await proc.exited;
    seconds = Math.round((performance.now() - began) / 1000);
    if (code !== 0 || !existsSync(report)) {
      console.error(`mutants: Stryker failed on ${file} (exit ${code}); its output is above`);
      strykerFailed.push(file);
      continue;
    }
  }
  const data = JSON.parse(readFileSync(report, "utf8")) as { files: Record<string, { source: string; mutants: ReportMutant[] }> };
  // A file of types only (src/secrets/access.ts) has no mutant, and Stryker reports no file.
  const entry = data.files[file] ?? Object.values(data.files)[0] ?? { source: "", mutants: [] };
  const valid = entry.mutants.filter((m) => !["CompileError", "RuntimeError", "Ignored", "Pending"].includes(m.status));
  const ignored = entry.mutants.filter((m) => m.status === "Ignored").length;
  const killed = valid.filter((m) => m.status === "Killed" || m.status === "Timeout").length;
  const survivors = valid.filter((m) => m.status === "Survived" || m.status === "NoCoverage");
  const known = accepted[file] ?? [];
  const describe = (m: ReportMutant, original: string) => `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName}: ${JSON.stringify(original)} → ${JSON.stringify(m.replacement)}`;
  const unexplained: string[] = [];
  let acceptedCount = 0;
  for (const m of survivors) {
    const original = originalOf(entry.source, m);
    const line = entry.source.split("\n")[m.location.start.line - 1]?.trim();
    if (known.some((a) => a.mutator === m.mutatorName && a.original === original && a.replacement === m.replacement && (a.line === undefined || a.line === line))) acceptedCount++;
    else unexplained.push(describe(m, original));
  }
  results.push({ file, total: valid.length, ignored, killed, survived: survivors.map((m) => describe(m, originalOf(entry.source, m))), acceptedCount, unexplained, seconds });
  if (unexplained.length || (valid.length && killed / valid.length < 0.9)) failed = true;
}

const pct = (n: number, d: number) => (d === 0 ? "—" : `${((100 * n) / d).toFixed(1)} %`);
console.log("mutants: file, mutants (compiling), killed, survived (of them accepted), score, score with the accepted, minutes");
for (const r of results) {
  console.log(`  ${r.file}: ${r.total} mutants${r.ignored ? ` (and ${r.ignored} left out by a "Stryker disable" comment)` : ""}, ${r.killed} killed, ${r.survived.length} survived (${r.acceptedCount} accepted), ${pct(r.killed, r.total)}, ${pct(r.killed + r.acceptedCount, r.total)}, ${(r.seconds / 60).toFixed(1)} min`);
  for (const u of r.unexplained) console.log(`    not accepted: ${u}`);
}
for (const file of strykerFailed) console.log(`  ${file}: Stryker failed (its initial test run, say): see stderr`);
process.exit(strykerFailed.length ? 2 : failed ? 1 : 0);
