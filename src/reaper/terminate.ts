/**
 * Ending processes we can prove are ours: each is named by pid and start time, and checked again
 * right before every signal. A process that leads its own group (or sits in the group of a plugin
 * host we spawned) is signalled with its group; anything else alone.
 */
import { identify, processGroupOf } from "./proc.ts";

export interface Target {
  pid: number;
  startTime: string;
}

function signal(target: Target, sig: NodeJS.Signals, ourGroups: ReadonlySet<number>): void {
  if (identify(target.pid, target.startTime) !== "same") return;
  const group = processGroupOf(target.pid);
  try {
    if (group !== null && (group === target.pid || ourGroups.has(group))) process.kill(-group, sig);
    else process.kill(target.pid, sig);
  } catch {
    // it ended between the check and the signal
  }
}

/** SIGTERM, up to `graceMs` to go, then SIGKILL. Resolves once all are gone (or SIGKILLed). */
export async function terminate(targets: readonly Target[], graceMs: number, ourGroups: ReadonlySet<number> = new Set()): Promise<void> {
  const living = () => targets.filter((t) => identify(t.pid, t.startTime) === "same");
  if (living().length === 0) return;
  for (const t of living()) signal(t, "SIGTERM", ourGroups);
  const deadline = performance.now() + graceMs;
  while (living().length && performance.now() < deadline) await Bun.sleep(10);
  for (const t of living()) signal(t, "SIGKILL", ourGroups);
  const killedBy = performance.now() + 1000;
  while (living().length && performance.now() < killedBy) await Bun.sleep(5);
}
