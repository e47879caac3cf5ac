/**
 * permissions.json in the state folder: standing "Always" grants. A grant names the plugin and
 * the tool (`plugin <name> tool <tool>`), is scoped to one project folder's real path (symbolic
 * links resolved when the grant is made and when it is looked up), and is bound to the folder of
 * the plugin it was given to, so it never passes to another plugin that later declares the same
 * tool name, to a same-named plugin in another folder, nor to another project. Every change is
 * made under the file's lock.
 */
import { realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { readJsonStrict, updateJsonLocked } from "../files.ts";

export const GrantSchema = v.strictObject({
  scope: v.string(),
  rule: v.string(),
  /** The real path of the granted plugin's folder; absent in grants made by cxagent 0.1, which held for any folder. */
  folder: v.optional(v.string()),
  grantedAt: v.string(),
});
export type Grant = v.InferOutput<typeof GrantSchema>;

const GrantsFileSchema = v.strictObject({ grants: v.array(GrantSchema) });
const EMPTY: v.InferOutput<typeof GrantsFileSchema> = { grants: [] };

export function permissionsPath(stateDir: string): string {
  return join(stateDir, "permissions.json");
}

export { ruleFor } from "../protocol/rules.ts";

/** The scope a project folder's grants are stored and looked up under: its real path. */
export function projectScope(projectDir: string): string {
  const absolute = resolve(projectDir);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

export function readGrants(stateDir: string): Grant[] {
  return readJsonStrict(permissionsPath(stateDir), GrantsFileSchema, EMPTY, "permissions file").grants;
}

const matches = (g: Grant, scope: string, rule: string, folder: string) => g.scope === scope && g.rule === rule && (g.folder === undefined || g.folder === folder);

/** `scope` is a projectScope(); `folder` the real path of the plugin's folder. */
export function hasGrant(stateDir: string, scope: string, rule: string, folder: string): boolean {
  return readGrants(stateDir).some((g) => matches(g, scope, rule, folder));
}

export function addGrant(stateDir: string, scope: string, rule: string, folder: string): Grant {
  const grant: Grant = { scope, rule, folder, grantedAt: new Date().toISOString() };
  updateJsonLocked(permissionsPath(stateDir), GrantsFileSchema, EMPTY, "permissions file", (file) => ({
    grants: [...file.grants.filter((g) => !(g.scope === scope && g.rule === rule && g.folder === folder)), grant],
  }));
  return grant;
}

/** Removes the grants of `rule` in `scope` (every scope when null); returns how many. */
export function revokeGrant(stateDir: string, rule: string, scope: string | null): number {
  let removed = 0;
  updateJsonLocked(permissionsPath(stateDir), GrantsFileSchema, EMPTY, "permissions file", (file) => {
    const kept = file.grants.filter((g) => !(g.rule === rule && (scope === null || g.scope === scope)));
    removed = file.grants.length - kept.length;
    return removed ? { grants: kept } : null;
  });
  return removed;
}

/**
 * Removes every grant bound to the plugin folder whose real path is `folder`, in every project
 * (`cxagent uninstall`); grants of cxagent 0.1, bound to no folder, go too when they name `plugin`.
 * Returns how many went.
 */
export function revokeGrantsOfFolder(stateDir: string, plugin: string, folder: string): number {
  let removed = 0;
  const prefix = `plugin ${plugin} tool `;
  updateJsonLocked(permissionsPath(stateDir), GrantsFileSchema, EMPTY, "permissions file", (file) => {
    const kept = file.grants.filter((g) => !(g.folder === folder || (g.folder === undefined && g.rule.startsWith(prefix))));
    removed = file.grants.length - kept.length;
    return removed ? { grants: kept } : null;
  });
  return removed;
}
