/**
 * The pids cgroup that caps a sandboxed host's processes (`processes`): RLIMIT_NPROC counts every
 * process of the user (and root is exempt), so the cap is a cgroup of the host's own, where one
 * can be made: a v1 `pids` hierarchy (/sys/fs/cgroup/pids), or cgroup v2 where this process's
 * cgroup delegates `pids`. The launcher makes it and moves itself in before execve; the parent
 * reads whether the cap was hit and removes it once the host has ended.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const V1 = "/sys/fs/cgroup/pids";
const V2 = "/sys/fs/cgroup";

/** The folder new pids cgroups go in, or null where none can be made. */
export function pidsBase(): string | null {
  if (existsSync(join(V1, "cgroup.procs")) && writable(V1)) return join(V1, "cxagent");
  try {
    if (!readFileSync(join(V2, "cgroup.controllers"), "utf8").split(/\s+/).includes("pids")) return null;
    const own = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1];
    if (own === undefined) return null;
    const folder = join(V2, own);
    return readFileSync(join(folder, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("pids") && writable(folder) ? folder : null;
  } catch {
    return null;
  }
}

function writable(folder: string): boolean {
  try {
    const probe = join(folder, `cxagent-probe-${process.pid}`);
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

export function cgroupOf(base: string, pid: number): string {
  return join(base, `host-${pid}`);
}

/** Makes the host's cgroup with `max` processes and moves this process in. Throws naming the step. */
export function joinPidsCgroup(base: string, max: number): string {
  sweepPidsCgroups(base);
  const folder = cgroupOf(base, process.pid);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "pids.max"), String(max));
  writeFileSync(join(folder, "cgroup.procs"), String(process.pid));
  return folder;
}

/** After the host ended: whether its cgroup refused a fork (pids.events "max N", N > 0); removes it. */
export function endPidsCgroup(base: string, pid: number): boolean {
  const folder = cgroupOf(base, pid);
  let hit = false;
  try {
    hit = Number(/^max (\d+)/m.exec(readFileSync(join(folder, "pids.events"), "utf8"))?.[1] ?? 0) > 0;
  } catch {
    return false;
  }
  for (let i = 0; i < 20; i++) {
    try {
      rmdirSync(folder);
      break;
    } catch {
      Bun.sleepSync(5); // its last processes are still leaving
    }
  }
  return hit;
}

/**
 * Removes the cgroups of hosts whose parent never removed them (a launcher run by hand, a parent
 * killed first): only those named for a pid that no longer runs, and only empty ones (the
 * kernel refuses to remove a cgroup with a process in it).
 */
export function sweepPidsCgroups(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^host-(\d+)$/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    try {
      rmdirSync(join(base, name));
    } catch {
      // in use, or gone meanwhile
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}
