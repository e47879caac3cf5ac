/**
 * permissions.json in the state folder: standing "Always" grants. A grant names the plugin and
 * the tool (`plugin <name> tool <tool>`) and is scoped to one project folder, so it never passes
 * to another plugin that later declares the same tool name, nor to another project.
 */
import { join } from "node:path";
import * as v from "valibot";
import { readJsonStrict, writeJsonAtomic } from "../files.ts";

export const GrantSchema = v.strictObject({
  scope: v.string(),
  rule: v.string(),
  grantedAt: v.string(),
});
export type Grant = v.InferOutput<typeof GrantSchema>;

const GrantsFileSchema = v.strictObject({ grants: v.array(GrantSchema) });

export function permissionsPath(stateDir: string): string {
  return join(stateDir, "permissions.json");
}

export function ruleFor(plugin: string, tool: string): string {
  return `plugin ${plugin} tool ${tool}`;
}

export function readGrants(stateDir: string): Grant[] {
  return readJsonStrict(permissionsPath(stateDir), GrantsFileSchema, { grants: [] }, "permissions file").grants;
}

export function hasGrant(stateDir: string, scope: string, rule: string): boolean {
  return readGrants(stateDir).some((g) => g.scope === scope && g.rule === rule);
}

export function addGrant(stateDir: string, scope: string, rule: string): Grant {
  const grants = readGrants(stateDir).filter((g) => !(g.scope === scope && g.rule === rule));
  const grant = { scope, rule, grantedAt: new Date().toISOString() };
  writeJsonAtomic(permissionsPath(stateDir), { grants: [...grants, grant] });
  return grant;
}

/** Removes the grants of `rule` in `scope` (every scope when null); returns how many. */
export function revokeGrant(stateDir: string, rule: string, scope: string | null): number {
  const grants = readGrants(stateDir);
  const kept = grants.filter((g) => !(g.rule === rule && (scope === null || g.scope === scope)));
  if (kept.length !== grants.length) writeJsonAtomic(permissionsPath(stateDir), { grants: kept });
  return grants.length - kept.length;
}
