/**
 * Plugins approved at a folder no search folder reaches (approved by their path, as every README
 * example does: `cxagent approve examples/calculator`). `cxagent list` shows them beside the ones
 * found by name, and `cxagent mcp` serves them alike; no plugin code runs to find them.
 */
import { existsSync } from "node:fs";
import type { CatalogEntry } from "../discovery/catalog.ts";
import type { Resolved } from "../discovery/discover.ts";
import { isCxError } from "../errors.ts";
import { readApprovals } from "../trust/approvals.ts";

export interface ApprovedByPath {
  /** The name the approval holds. */
  name: string;
  /** The folder it was approved at. */
  directory: string;
  /** Where its plugin is now; null when its folder is gone or holds no plugin any more. */
  location: Resolved | null;
  /** The folder is gone (the approval outlived it). */
  gone: boolean;
  /** Why the folder holds no plugin that can be located (not set when it is gone). */
  problem: string | null;
}

/**
 * Every approval whose folder is not already among `listed` (one entry per folder, in the
 * approvals file's order). `locate` resolves a folder as a reference by path would.
 */
export function approvedByPath(stateDir: string, listed: readonly CatalogEntry[], locate: (ref: string) => Resolved): ApprovedByPath[] {
  const seen = new Set(listed.map((e) => e.location?.folder).filter((f) => f !== undefined));
  const extra: ApprovedByPath[] = [];
  for (const approval of readApprovals(stateDir)) {
    if (seen.has(approval.directory)) continue;
    seen.add(approval.directory);
    let location: Resolved | null = null;
    let problem: string | null = null;
    const gone = !existsSync(approval.directory);
    if (!gone) {
      try {
        location = locate(approval.directory);
      } catch (error) {
        if (!isCxError(error)) throw error;
        problem = error.message;
      }
    }
    if (location && listed.some((e) => e.location?.library === location.library)) continue;
    extra.push({ name: approval.plugin, directory: approval.directory, location, gone, problem });
  }
  return extra;
}
