/**
 * Shared test helpers: where the built fixtures are, throwaway folders, and running the CLI the
 * way a user does (a real process, real stdout, stderr and exit code).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..");
export const FIXTURES = join(ROOT, "test/fixtures/build");
export const CALCULATOR = join(ROOT, "examples/calculator");

/** The folder of a built fixture (library + sidecar). */
export function fixture(name: string): string {
  return join(FIXTURES, name);
}

export function fixtureLibrary(name: string): string {
  return join(FIXTURES, name, `${name}.so`);
}

/** A temporary folder, removed when disposed (`using dir = tempDir()`). */
export function tempDir(prefix = "cxagent-test-"): { path: string } & Disposable {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

/** Copies a fixture's folder into `dir` and returns the copy's path. */
export function copyFixture(name: string, dir: string, as = name): string {
  const target = join(dir, as);
  cpSync(fixture(name), target, { recursive: true });
  return target;
}

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number;
  json: () => any;
}

/** Runs `cxagent` from source with isolated config and state folders. */
export async function cli(args: string[], options: { env?: Record<string, string>; cwd?: string; stdin?: string; bin?: string[] } = {}): Promise<CliResult> {
  const proc = Bun.spawn({
    cmd: [...(options.bin ?? [process.execPath, join(ROOT, "src/cli/main.ts")]), ...args],
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code, json: () => JSON.parse(stdout) };
}

/** Reads the "returned freed" counters a fixture writes to CXAGENT_FX_FREE_LOG. */
export function freeCounts(file: string): { returned: number; freed: number } {
  const [returned, freed] = readFileSync(file, "utf8").trim().split(" ").map(Number);
  return { returned: returned!, freed: freed! };
}

/** Waits until `check` is true, polling; fails after `ms`. Tests wait for conditions, not time. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000, what = "the condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
