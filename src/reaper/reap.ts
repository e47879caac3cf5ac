/**
 * Reaping (SPEC §8): for every session record whose owner is gone, end each recorded process that
 * still exists with the same start time, and whatever is left in the groups they made (every
 * plugin host's group, a registered child's group if it led one), and report what became of each.
 * A pid now held by another process is reported as reused and left alone. A record whose owner
 * lives is not touched; a corrupt one, or one naming a process that can never be ours (pid ≤ 1,
 * this process or an ancestor, this process's own group or session), is reported by path, kept
 * for inspection, and nothing in it is signalled.
 */
import { rmSync } from "node:fs";
import { isCxError } from "../errors.ts";
import { endProcesses, type Outcome } from "./escalate.ts";
import { forbiddenGroup, forbiddenPid, type Lineage, ownLineage } from "./ours.ts";
import { identify } from "./proc.ts";
import { ownedOf, readRecord, recordFiles, type SessionRecordData } from "./record.ts";

export interface ReapEntry {
  plugin: string;
  pid: number;
  /** `member`: a process the plugin never registered, found in a group it made (its host's). */
  kind: "host" | "child" | "member";
  outcome: Exclude<Outcome, "gone">;
  record: string;
}

export interface ReapReport {
  entries: ReapEntry[];
  /** Records of sessions still running, left alone. */
  live: string[];
  /** Records that could not be read, left for inspection. */
  corrupt: { path: string; problem: string }[];
  /** Records naming a process that can never be ours: nothing in them was signalled. */
  refused: { path: string; problem: string }[];
}

/** Why nothing in this record may be signalled, or null. */
function refusal(record: SessionRecordData, lineage: Lineage): string | null {
  for (const p of record.processes) {
    const owned = ownedOf(p);
    const why = forbiddenPid(p.pid, lineage) ?? (owned.pgid === p.pid ? forbiddenGroup(p.pid, lineage) : null);
    if (why) return `it names ${p.kind === "host" ? "a plugin host" : "a process"} of plugin '${p.plugin}' that cannot be one: ${why}`;
  }
  return null;
}

export async function reap(options: { stateDir: string; dryRun?: boolean; graceMs?: number; skip?: string }): Promise<ReapReport> {
  const report: ReapReport = { entries: [], live: [], corrupt: [], refused: [] };
  // Read from /proc only when a dead session's record is found: most runs find none.
  let lineage: Lineage | null = null;
  for (const path of recordFiles(options.stateDir)) {
    if (path === options.skip) continue;
    let record: SessionRecordData | null;
    try {
      record = readRecord(path);
    } catch (error) {
      report.corrupt.push({ path, problem: isCxError(error) ? error.message : String(error) });
      continue;
    }
    // Removed since it was listed: its session ended cleanly meanwhile (or it was a dangling link).
    if (record === null) continue;
    if (identify(record.owner.pid, record.owner.startTime) === "same") {
      report.live.push(path);
      continue;
    }
    const refused = refusal(record, (lineage ??= ownLineage()));
    if (refused) {
      report.refused.push({ path, problem: `the session record ${path} was not acted on: ${refused}` });
      continue;
    }
    const recorded = new Map(record.processes.map((p) => [ownedOf(p), p] as const));
    const endings = await endProcesses([...recorded.keys()], { graceMs: options.graceMs ?? 2000, dryRun: options.dryRun });
    let settled = true;
    endings.forEach((ending) => {
      const { plugin, kind } = recorded.get(ending.target)!;
      if (ending.outcome !== "gone") report.entries.push({ plugin, pid: ending.target.pid, kind, outcome: ending.outcome, record: path });
      for (const m of ending.members) report.entries.push({ plugin, pid: m.pid, kind: "member", outcome: m.outcome, record: path });
      if (ending.outcome === "still-running" || ending.members.some((m) => m.outcome === "still-running")) settled = false;
    });
    // A record is kept while anything it names survives, so the next run tries again.
    if (!options.dryRun && settled) rmSync(path, { force: true });
  }
  return report;
}
