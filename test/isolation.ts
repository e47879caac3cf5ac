/**
 * Running part of a test where a mistake cannot hurt the machine: inside a private pid namespace,
 * where pid 1 is a shell of the test's own and kill(-1) reaches only the namespace (SPEC §8 tests
 * that could signal pid 1 run only there), or as an ordinary user. Both need root; a test that
 * needs one skips, with a message, where it is unavailable.
 */
import { join } from "node:path";
import { CONFIG_DIR, ROOT, STATE_DIR } from "./helpers.ts";

function works(cmd: string[]): boolean {
  try {
    return Bun.spawnSync(cmd, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
  } catch {
    return false;
  }
}

export const PID_NAMESPACE = works(["unshare", "--pid", "--fork", "--mount-proc", "true"]);
if (!PID_NAMESPACE) console.error("skipping tests that could signal pid 1: `unshare --pid --fork --mount-proc` is unavailable here (it needs root)");

const asNobodyWorks = process.getuid?.() === 0 && works(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "true"]);
/** Whether user nobody can run this checkout: read its sources and run its Bun (a clone in a 0700 folder cannot). */
const checkoutReadable = asNobodyWorks && works(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", `test -r "${join(ROOT, "src/main.ts")}" && test -x "${process.execPath}"`]);
export const NOBODY = asNobodyWorks && checkoutReadable;
if (!asNobodyWorks) console.error("skipping tests run as an ordinary user: they need root and setpriv");
else if (!checkoutReadable) console.error(`skipping tests run as an ordinary user: user nobody cannot read this checkout (${ROOT}) or run its Bun`);

/** How the shell inside runs the CLI from source: `"$CX" invoke ...`. */
export const CLI_IN_SHELL = `${process.execPath} ${join(ROOT, "src/main.ts")}`;

/**
 * Runs `script` with /bin/sh as pid 1 of a new pid namespace (it stays pid 1: the script must not
 * end in a command sh could exec into). `$CX` runs the CLI. The shell traps SIGTERM and prints
 * `pid 1 got SIGTERM` on stderr, so a signal that reached it is seen.
 */
export async function inPidNamespace(script: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(["unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", `trap 'echo "pid 1 got SIGTERM" >&2' TERM\n${script}\ntrue`], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, CX: CLI_IN_SHELL, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

/** Runs a command as user nobody (uid and gid 65534, no capabilities). */
export async function asNobody(cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...cmd], {
    cwd: "/",
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}
