/**
 * What a session's state folder holds, for the commands that work on it without loading any
 * plugin or reading config.json: the standing grants, and the records reaping works from.
 */
import { resolveFolders } from "../discovery/paths.ts";
import { sweepSnapshots } from "../host/child-transport.ts";
import { snapshotBase } from "../host/private-folder.ts";
import { reap, type ReapReport } from "../reaper/reap.ts";
import { type Grant, projectScope, readGrants, revokeGrant } from "../trust/grants.ts";
import { ResultStore } from "../results/store.ts";

export interface StateOptions {
  stateDir?: string;
}

/** The project scope grants are stored under: the folder's real path. */
export { projectScope };
export type { Grant, ReapReport };

export function listGrants(options: StateOptions = {}): Grant[] {
  return readGrants(resolveFolders(options).stateDir);
}

/** Revokes `rule` in the project `scope` (every project when null); returns how many went. */
export function revokeGrants(rule: string, scope: string | null, options: StateOptions = {}): number {
  return revokeGrant(resolveFolders(options).stateDir, rule, scope);
}

/**
 * Ends what sessions that died left behind (SPEC §8), and removes the snapshots of TypeScript
 * plugins their hosts left (Session.open does that only when it finds a session record); `dryRun`
 * signals and removes nothing.
 */
export async function reapLeftovers(options: StateOptions & { dryRun?: boolean } = {}): Promise<ReapReport> {
  const { stateDir } = resolveFolders(options);
  const report = await reap({ stateDir, dryRun: options.dryRun });
  if (!options.dryRun) sweepSnapshots(snapshotBase(stateDir));
  return report;
}

/** The result store of the state folder (issue 41): `<state>/results`. */
export function resultStore(options: StateOptions = {}): ResultStore {
  return new ResultStore(resolveFolders(options).stateDir);
}
