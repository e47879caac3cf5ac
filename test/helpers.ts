/**
 * Shared test helpers: where the built fixtures are, throwaway folders, and running the CLI the
 * way a user does (a real process, real stdout, stderr and exit code).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Session, type SessionOptions } from "../src/session/session.ts";
import { CxError } from "../src/errors.ts";
import { privateFolderProblem } from "../src/host/private-folder.ts";
import { expect } from "bun:test";

/**
 * Plugin hosts get an allow-listed environment (src/session/host-env.ts); the fixtures' own
 * settings reach them, in every process a test starts, because they are named here.
 */
process.env.CXAGENT_PASS_ENV = [
  "CXAGENT_FX_FREE_LOG", "CXAGENT_FX_FREE_LOG_EVERY", "CXAGENT_FX_STARTS", "CXAGENT_FX_FAULT", "CXAGENT_FX_FAULT_ONCE",
  "CXAGENT_FX_DESCRIBE", "CXAGENT_FX_DIFF", "CXAGENT_FX_MARKER", "CXAGENT_FX_REPORT", "CXAGENT_FX_STATE_DIR", "CXAGENT_FX_CORTEX",
  // npm run mutants: the mutant Stryker made active in a test is active in the plugin hosts it starts too
  "__STRYKER_ACTIVE_MUTANT__",
].join(",");

/** For a process a test starts with an environment of its own: the mutant Stryker made active here is active there too. */
export const STRYKER: Record<string, string> = process.env.__STRYKER_ACTIVE_MUTANT__ === undefined ? {} : { __STRYKER_ACTIVE_MUTANT__: process.env.__STRYKER_ACTIVE_MUTANT__ };

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

/**
 * Writes a module plugin `<name><ext>` (TypeScript unless told) and its sidecar into
 * `dir/<name>/`, with one tool `work` unless `manifest` says otherwise; returns the folder.
 */
export function writeModule(dir: string, name: string, code: string, manifest: Record<string, unknown> = {}, ext = ".ts"): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, `${name}${ext}`), code);
  writeFileSync(join(folder, `${name}.plugin.json`), JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools: [{ name: "work" }], ...manifest }));
  return folder;
}

/** Config and state folders for this test process, away from the user's own. */
export const HOME = mkdtempSync(join(tmpdir(), "cxagent-home-"));
export const CONFIG_DIR = join(HOME, "config");
export const STATE_DIR = join(HOME, "state");
mkdirSync(CONFIG_DIR, { recursive: true });
mkdirSync(STATE_DIR, { recursive: true });
process.on("exit", () => rmSync(HOME, { recursive: true, force: true }));

/**
 * Module plugins' snapshots go in a private folder (src/host/private-folder.ts), and the state
 * folder above is under the shared /tmp: every process a test starts gets a private
 * $XDG_RUNTIME_DIR instead, in this user's home (or the one it already has, when that is private).
 */
const givenRuntime = process.env.XDG_RUNTIME_DIR;
/**
 * Removes the runtime folders of test processes that are gone: `bun test` does not always run exit
 * handlers, and one killed runs none. A folder is named for its process; one named the older way,
 * without a pid, goes once nothing has changed in it for an hour.
 */
function sweepRuntimeFolders() {
  const hourAgo = Date.now() - 3_600_000;
  for (const name of readdirSync(homedir())) {
    if (!name.startsWith(".cxagent-test-run-")) continue;
    const path = join(homedir(), name);
    const pid = /^\.cxagent-test-run-(\d+)-/.exec(name)?.[1];
    try {
      const stale = pid ? !existsSync(`/proc/${pid}`) : [path, join(path, "cxagent")].every((p) => !existsSync(p) || statSync(p).mtimeMs < hourAgo);
      if (stale) rmSync(path, { recursive: true, force: true });
    } catch {
      // gone meanwhile
    }
  }
}
export const RUNTIME_DIR =
  givenRuntime && existsSync(givenRuntime) && privateFolderProblem(givenRuntime) === null ? givenRuntime : (sweepRuntimeFolders(), mkdtempSync(join(homedir(), `.cxagent-test-run-${process.pid}-`)));
if (RUNTIME_DIR !== givenRuntime) {
  process.env.XDG_RUNTIME_DIR = RUNTIME_DIR;
  process.on("exit", () => rmSync(RUNTIME_DIR, { recursive: true, force: true }));
}

/**
 * A session for tests, in the test folders. Unapproved plugins are approved as if a person had
 * said yes at the prompt (trust itself is tested through the CLI and its real prompt).
 */
export function openSession(options: SessionOptions = {}): Promise<Session> {
  return Session.open({ configDir: CONFIG_DIR, stateDir: STATE_DIR, confirmTrust: async () => true, ...options });
}

/** The CxError a promise rejects with (the test fails if it resolves, or rejects otherwise). */
export async function refusal(promise: Promise<unknown>): Promise<CxError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CxError);
  return error as CxError;
}

/** Approves a plugin's current files through the public API, as `cxagent approve --hash` does. */
export async function approve(ref: string, stateDir = STATE_DIR): Promise<string> {
  await using session = await Session.open({ cwd: ROOT, configDir: CONFIG_DIR, stateDir, reap: false });
  const { hash } = session.inspect(ref).loadSet;
  await session.approve(ref, { hash });
  return hash;
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
    cmd: [...(options.bin ?? [process.execPath, join(ROOT, "src/main.ts")]), ...args],
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code, json: () => JSON.parse(stdout) };
}

/** Reads the "returned freed" counters a fixture writes to CXAGENT_FX_FREE_LOG (a Cortex fixture adds its plugin_drop count). */
export function freeCounts(file: string): { returned: number; freed: number; drops?: number } {
  const [returned, freed, drops] = readFileSync(file, "utf8").trim().split(/\s+/).map(Number);
  return { returned: returned!, freed: freed!, ...(drops === undefined ? {} : { drops }) };
}

/** Waits until `check` is true, polling; fails after `ms`. Tests wait for conditions, not time. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000, what = "the condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/** True while a process with this pid exists and is not a zombie waiting to be collected. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

export interface TtyResult {
  /** Everything the terminal showed (stdout and stderr together), without colour codes. */
  output: string;
  /** The bytes the terminal received, exactly (escape sequences included). */
  raw: string;
  code: number;
}

/**
 * Runs the CLI on a real pseudo-terminal. `answers` are sent one at a time, each once the screen
 * shows its `after` text: the way a person answers a prompt.
 */
export async function tty(
  args: string[],
  answers: { after: string | RegExp; send: string }[],
  options: { env?: Record<string, string>; cwd?: string; onAnswer?: (raw: string, index: number) => void } = {},
): Promise<TtyResult> {
  let screen = "";
  const decoder = new TextDecoder();
  let closed!: () => void;
  const eof = new Promise<void>((resolve) => (closed = resolve));
  const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, ...options.env },
    terminal: {
      cols: 200,
      rows: 50,
      data(_terminal, data) {
        screen += decoder.decode(data, { stream: true });
      },
      exit: () => closed(),
    },
  });
  let from = 0;
  for (const answer of answers) {
    const seen = () => {
      const rest = screen.slice(from);
      const at = typeof answer.after === "string" ? rest.indexOf(answer.after) : rest.search(answer.after);
      if (at >= 0) from += at + 1;
      return at >= 0;
    };
    await until(seen, 20_000, `the terminal to show ${String(answer.after)}; it shows:\n${screen}`);
    options.onAnswer?.(screen, answers.indexOf(answer));
    if (answer.send) proc.terminal!.write(answer.send);
  }
  const code = await proc.exited;
  await eof; // the terminal's last bytes arrive after the exit
  proc.terminal?.close();
  return { output: screen.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r\n/g, "\n"), raw: screen, code };
}

/** Live processes whose command line names `library`: plugin hosts of that plugin. */
export function hostsOf(library: string): number[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  return pids
    .filter((pid) => {
      try {
        return alive(Number(pid)) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(library);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Settles as `promise` does, or fails once `ms` have passed: a regression fails, never hangs. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a terminal `cols` wide shows after receiving `raw`: the lines of its screen (scrolled-off
 * lines kept), trailing spaces trimmed. Understands what cxagent writes: text, \r, \n, \t, line
 * wrap, ESC[K (clear to the end of the line), ESC[nA (up), ESC[nG (to a column); colours and any
 * other escape are ignored.
 */
export function renderScreen(raw: string, cols = 200): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  let wrapPending = false;
  const line = () => (lines[row] ??= []);
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\x1b" && raw[i + 1] === "[") {
      const m = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(raw.slice(i));
      if (!m) continue;
      i += m[0].length - 1;
      const n = Number(m[1] || "1");
      if (m[2] === "K") line().length = Math.min(line().length, col);
      else if (m[2] === "A") row = Math.max(0, row - n);
      else if (m[2] === "G") col = Math.min(cols - 1, n - 1);
      wrapPending = false;
      continue;
    }
    if (c === "\r") {
      col = 0;
      wrapPending = false;
    } else if (c === "\n") {
      row++;
      line();
      col = 0; // the terminal's ONLCR: a newline also returns the carriage
      wrapPending = false;
    } else if (c === "\t") {
      col = Math.min(cols - 1, (Math.floor(col / 8) + 1) * 8);
    } else {
      if (wrapPending) {
        row++;
        col = 0;
        wrapPending = false;
      }
      const l = line();
      while (l.length < col) l.push(" ");
      l[col] = c;
      if (col === cols - 1) wrapPending = true;
      else col++;
    }
  }
  return lines.map((l) => l.join("").trimEnd());
}
