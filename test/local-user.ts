/**
 * A second, unprivileged local user, for tests that play the attacker (issue 36): created with
 * useradd where the test runs as root, removed again with everything it owns outside the test's
 * folders; the tests that need one skip, with a message, elsewhere.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

function works(cmd: string[]): boolean {
  try {
    return Bun.spawnSync(cmd, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
  } catch {
    return false;
  }
}

export const LOCAL_USER = process.getuid?.() === 0 && works(["which", "useradd"]) && works(["which", "userdel"]) && works(["which", "setpriv"]);
if (!LOCAL_USER) console.error("skipping the tests that play a second local user: they need root, useradd, userdel and setpriv");

export interface LocalUser {
  name: string;
  uid: number;
  gid: number;
  /** Runs `cmd` as this user (no capabilities, no supplementary groups). */
  run(cmd: string[], env?: Record<string, string>): { code: number; stdout: string; stderr: string };
  /** Runs `cmd` as this user, in the background. */
  spawn(cmd: string[], env?: Record<string, string>): Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Removes the user, and the paths given (what it planted). */
  [Symbol.dispose](): void;
}

const NAME = /^cxatk(\d+)x[a-z0-9]+$/;

/**
 * Removes the users an earlier test process made and could not remove (`bun test --bail` ends the
 * process without running afterAll), with what they own in /tmp: their maker's pid is in the name.
 */
function sweepLeftUsers() {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const [name, , uid] = line.split(":");
    const match = NAME.exec(name ?? "");
    if (!match || existsSync(`/proc/${match[1]}`)) continue;
    for (const entry of readdirSync("/tmp")) {
      const path = join("/tmp", entry);
      try {
        if (lstatSync(path).uid === Number(uid)) rmSync(path, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
    }
    Bun.spawnSync(["userdel", name!], { stderr: "ignore" });
  }
}

/** Creates a fresh system user (no home, no login shell); `cleanup` lists what to remove with it. */
export function localUser(cleanup: string[] = []): LocalUser {
  sweepLeftUsers();
  const name = `cxatk${process.pid}x${Math.random().toString(36).slice(2, 6)}`;
  const made = Bun.spawnSync(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name], { stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`useradd ${name} failed: ${made.stderr.toString()}`);
  const id = (flag: string) => Number(Bun.spawnSync(["id", flag, name]).stdout.toString().trim());
  const uid = id("-u");
  const gid = id("-g");
  const remove = () => {
    for (const path of cleanup) rmSync(path, { recursive: true, force: true });
    // (whoever spawned a process as it ends that process, by its pid, before this)
    Bun.spawnSync(["userdel", name], { stderr: "ignore" });
  };
  process.once("exit", remove);
  const as = (cmd: string[]) => ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--inh-caps=-all", ...cmd];
  return {
    name,
    uid,
    gid,
    run(cmd, env = {}) {
      const r = Bun.spawnSync(as(cmd), { cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdout: "pipe", stderr: "pipe", timeout: 30_000 });
      return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    },
    spawn(cmd, env = {}) {
      return Bun.spawn(as(cmd), { cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    },
    [Symbol.dispose]() {
      process.off("exit", remove);
      remove();
    },
  };
}
