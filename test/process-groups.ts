/**
 * Real process groups for the reaper's tests: a shell leading a group and session of its own (as
 * a plugin host is spawned), with children whose pids it names on its first line.
 */
import { readStat } from "../src/reaper/proc.ts";

/** Alive, and not a zombie. */
export const alive = (pid: number) => {
  const s = readStat(pid);
  return s !== null && s.state !== "Z";
};

/** `sh -c script` in a group and session of its own; its first line of output names pids. Disposing ends its group and any group those pids lead. */
export async function started(script: string) {
  const proc = Bun.spawn(["sh", "-c", script], { detached: true, stdout: "pipe" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const pids = text.trim().split(" ").map(Number);
  return {
    pid: proc.pid,
    pids,
    child: pids[0]!,
    proc,
    [Symbol.asyncDispose]: async () => {
      for (const group of [proc.pid, ...pids]) {
        try {
          process.kill(-group, "SIGKILL");
        } catch {
          // not a group, or ended
        }
      }
      await proc.exited;
    },
  };
}

/** A group leader with a child in its group; with `ignoreTerm`, both ignore SIGTERM. */
export const leader = (ignoreTerm = false) => started(`${ignoreTerm ? "trap '' TERM; " : ""}sleep 60 & echo $!; wait; sleep 60`);
