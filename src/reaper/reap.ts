/**
 * Reaping (SPEC §8): for every session record whose owner is gone, end each recorded process that
 * still exists with the same start time, and report it; a pid now held by another process is
 * reported as reused and left alone. A record whose owner lives is not touched; a corrupt one is
 * reported by path and kept for inspection.
 */
import { rmSync } from "node:fs";
import { isCxError } from "../errors.ts";
import { identify } from "./proc.ts";
import { readRecord, recordFiles } from "./record.ts";
import { terminate } from "./terminate.ts";

export interface ReapEntry {
  plugin: string;
  pid: number;
  kind: "host" | "child";
  outcome: "killed" | "would-kill" | "reused";
  record: string;
}

export interface ReapReport {
  entries: ReapEntry[];
  /** Records of sessions still running, left alone. */
  live: string[];
  /** Records that could not be read, left for inspection. */
  corrupt: { path: string; problem: string }[];
}

export async function reap(options: { stateDir: string; dryRun?: boolean; graceMs?: number; skip?: string }): Promise<ReapReport> {
  const report: ReapReport = { entries: [], live: [], corrupt: [] };
  for (const path of recordFiles(options.stateDir)) {
    if (path === options.skip) continue;
    let record;
    try {
      record = readRecord(path);
    } catch (error) {
      report.corrupt.push({ path, problem: isCxError(error) ? error.message : String(error) });
      continue;
    }
    if (identify(record.owner.pid, record.owner.startTime) === "same") {
      report.live.push(path);
      continue;
    }
    const present = record.processes.map((p) => ({ ...p, identity: identify(p.pid, p.startTime) }));
    const ours = present.filter((p) => p.identity === "same");
    for (const p of present) {
      if (p.identity === "gone") continue; // it ended by itself: nothing to say
      report.entries.push({
        plugin: p.plugin,
        pid: p.pid,
        kind: p.kind,
        outcome: p.identity === "reused" ? "reused" : options.dryRun ? "would-kill" : "killed",
        record: path,
      });
    }
    if (options.dryRun) continue;
    // Groups led by the session's plugin hosts are ours: processes a plugin started sit in them.
    const hostGroups = new Set(record.processes.filter((p) => p.kind === "host").map((p) => p.pid));
    await terminate(ours, options.graceMs ?? 2000, hostGroups);
    rmSync(path, { force: true });
  }
  return report;
}
