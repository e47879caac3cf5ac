/**
 * Helpers for the tests about processes a plugin starts (SPEC §8): real cxagent processes to
 * kill -9, what /proc says about a pid, and the session records on disk.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTimeOf } from "../src/reaper/proc.ts";
import { CONFIG_DIR, ROOT, STATE_DIR, until } from "./helpers.ts";

export interface Held {
  pid: number;
  held: { plugin: string; host: number; output: { pids?: number[] } }[];
}

/**
 * Starts a real session process (test/fixtures/hold-session.ts) holding the given plugins
 * (`ref` or `ref=settingsJSON`); resolves once they are loaded. Disposing of it (`using`) kills
 * what a test that failed midway left running: the session, each of its hosts with its process
 * group, and each child, when still the same process (same start time; a pid the system gave to
 * another process since is never signalled).
 */
export async function holdSession(state: string, refs: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-session.ts"), ...refs], {
    cwd: ROOT,
    env: { ...process.env, CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(state, "config"), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the session ended early: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  const held = JSON.parse(text) as Held;
  const children = held.held.flatMap((h) => h.output.pids ?? []);
  const hosts = held.held.map((h) => h.host);
  const started = [...hosts, ...children].filter((pid) => pid > 1).map((pid) => ({ pid, at: startTimeOf(pid) }));
  return {
    proc,
    held,
    hosts,
    children,
    [Symbol.dispose]() {
      proc.kill("SIGKILL");
      for (const { pid, at } of started) {
        if (at === null || startTimeOf(pid) !== at) continue;
        // A host still up leads its group: the group goes with it, as its own end would take it.
        const target = hosts.includes(pid) && procStat(pid)?.pgid === pid ? -pid : pid;
        try {
          process.kill(target, "SIGKILL");
        } catch {
          // it ended between the check and the signal
        }
      }
    },
  };
}

/** The CLI from source as a running process whose stderr can be waited on while it runs. */
export function startCli(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  const decoder = new TextDecoder();
  const drained = (async () => {
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  return {
    proc,
    get stderr() {
      return stderr;
    },
    /** Waits until stderr shows `text`. */
    async said(text: string | RegExp, ms = 20_000) {
      await until(() => (typeof text === "string" ? stderr.includes(text) : text.test(stderr)), ms, `the CLI to say ${String(text)}; it said:\n${stderr}`);
    },
    drained,
  };
}

export function sessionRecords(state: string): string[] {
  const dir = join(state, "sessions");
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")) : [];
}

export function readSessionRecord(state: string): { owner: { pid: number }; processes: { pid: number; kind: string; plugin: string; pgid?: number; sid?: number }[] } {
  const [file] = sessionRecords(state);
  if (!file) throw new Error(`no session record in ${state}`);
  return JSON.parse(readFileSync(join(state, "sessions", file), "utf8"));
}

/** What /proc/<pid>/stat says: parent, process group and session, or null for no such process. */
export function procStat(pid: number): { ppid: number; pgid: number; sid: number; state: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: f[0]!, ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]) };
  } catch {
    return null;
  }
}

/** The living members of process group `pgid`, as /proc shows them. */
export function groupMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      const s = procStat(pid);
      return s !== null && s.pgid === pgid && s.state !== "Z";
    });
}

/** A `setsid sleep` of the test's own (detached: in a session of its own): unrelated to any cxagent process. */
export function bystander(): { pid: number } & Disposable {
  const proc = Bun.spawn(["sleep", "600"], { stdout: "ignore", stderr: "ignore", detached: true });
  return { pid: proc.pid, [Symbol.dispose]: () => proc.kill("SIGKILL") };
}

/** Records the SIGTERM and SIGHUP this test process receives while in force (`using`). */
export function signalsReceived(): { received: string[] } & Disposable {
  const received: string[] = [];
  const onTerm = () => received.push("SIGTERM");
  const onHup = () => received.push("SIGHUP");
  process.on("SIGTERM", onTerm);
  process.on("SIGHUP", onHup);
  return {
    received,
    [Symbol.dispose]: () => {
      process.off("SIGTERM", onTerm);
      process.off("SIGHUP", onHup);
    },
  };
}
