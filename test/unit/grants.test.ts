/**
 * src/trust/grants.ts alone: standing "Always" grants in permissions.json, each bound to one
 * project's real path, one rule and one plugin folder (grants of cxagent 0.1, bound to no folder,
 * hold for any); added once, revoked by rule and scope or by plugin folder, and the file left
 * untouched when nothing goes. Real files in a private state folder; the prompt that makes a
 * grant is driven in test/integration/gate.test.ts.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { addGrant, hasGrant, permissionsPath, projectScope, readGrants, revokeGrant, revokeGrantsOfFolder, ruleFor } from "../../src/trust/grants.ts";
import { tempDir } from "../helpers.ts";

const R = "plugin calc tool add";

test("the file is permissions.json in the state folder", () => {
  expect(permissionsPath("/state")).toBe("/state/permissions.json");
  expect(ruleFor("calc", "add")).toBe(R);
});

test("a project's scope is its real path; a folder that does not exist, its absolute path", () => {
  using dir = tempDir();
  mkdirSync(join(dir.path, "real"));
  symlinkSync(join(dir.path, "real"), join(dir.path, "link"));
  expect(projectScope(join(dir.path, "link", ".", "x", ".."))).toBe(join(dir.path, "real"));
  expect(projectScope(join(dir.path, "none", "..", "none2"))).toBe(join(dir.path, "none2"));
});

test("no file: no grants, and none is written by a look-up or a revoke that removes nothing", () => {
  using dir = tempDir();
  expect(readGrants(dir.path)).toEqual([]);
  expect(hasGrant(dir.path, "/p", R, "/f")).toBe(false);
  expect(revokeGrant(dir.path, R, null)).toBe(0);
  expect(revokeGrantsOfFolder(dir.path, "calc", "/f")).toBe(0);
  expect(existsSync(permissionsPath(dir.path))).toBe(false);
});

test("a grant holds for its scope, rule and folder only", () => {
  using dir = tempDir();
  const before = Date.now();
  const grant = addGrant(dir.path, "/p", R, "/f");
  expect(grant).toEqual({ scope: "/p", rule: R, folder: "/f", grantedAt: grant.grantedAt });
  expect(Date.parse(grant.grantedAt)).toBeGreaterThanOrEqual(before - 1000);
  expect(grant.grantedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(readGrants(dir.path)).toEqual([grant]);
  expect(hasGrant(dir.path, "/p", R, "/f")).toBe(true);
  expect(hasGrant(dir.path, "/other", R, "/f")).toBe(false);
  expect(hasGrant(dir.path, "/p", "plugin calc tool sub", "/f")).toBe(false);
  expect(hasGrant(dir.path, "/p", R, "/other-folder")).toBe(false);
});

test("a grant of cxagent 0.1, with no folder, holds for the rule's plugin in any folder", () => {
  using dir = tempDir();
  writeFileSync(permissionsPath(dir.path), JSON.stringify({ grants: [{ scope: "/p", rule: R, grantedAt: "2025-01-01T00:00:00.000Z" }] }));
  expect(hasGrant(dir.path, "/p", R, "/any")).toBe(true);
  expect(hasGrant(dir.path, "/q", R, "/any")).toBe(false);
});

test("granting again replaces the same grant; other scopes, rules and folders stay", () => {
  using dir = tempDir();
  const a = addGrant(dir.path, "/p", R, "/f");
  const b = addGrant(dir.path, "/q", R, "/f");
  const c = addGrant(dir.path, "/p", "plugin calc tool sub", "/f");
  const d = addGrant(dir.path, "/p", R, "/g");
  const again = addGrant(dir.path, "/p", R, "/f");
  expect(readGrants(dir.path)).toEqual([b, c, d, again]);
  expect(a.scope).toBe(again.scope);
});

test("revoking a rule: in one scope, or in every scope (null); how many went", () => {
  using dir = tempDir();
  addGrant(dir.path, "/p", R, "/f");
  const q = addGrant(dir.path, "/q", R, "/f");
  const other = addGrant(dir.path, "/p", "plugin calc tool sub", "/f");
  expect(revokeGrant(dir.path, R, "/p")).toBe(1);
  expect(readGrants(dir.path)).toEqual([q, other]);
  addGrant(dir.path, "/p", R, "/g");
  expect(revokeGrant(dir.path, R, null)).toBe(2);
  expect(readGrants(dir.path)).toEqual([other]);
  // nothing to remove: the file is not rewritten
  const written = statSync(permissionsPath(dir.path)).mtimeMs;
  const text = readFileSync(permissionsPath(dir.path), "utf8");
  Bun.sleepSync(20);
  expect(revokeGrant(dir.path, R, null)).toBe(0);
  expect(revokeGrantsOfFolder(dir.path, "nobody", "/nowhere")).toBe(0);
  expect(statSync(permissionsPath(dir.path)).mtimeMs).toBe(written);
  expect(readFileSync(permissionsPath(dir.path), "utf8")).toBe(text);
});

test("uninstalling a folder revokes its grants in every project, and 0.1's grants naming that plugin", () => {
  using dir = tempDir();
  const legacy = [
    { scope: "/p", rule: R, grantedAt: "2025-01-01T00:00:00.000Z" },
    { scope: "/p", rule: "plugin calculator tool add", grantedAt: "2025-01-01T00:00:00.000Z" },
  ];
  writeFileSync(permissionsPath(dir.path), JSON.stringify({ grants: legacy }));
  addGrant(dir.path, "/p", R, "/f");
  addGrant(dir.path, "/q", "plugin calc tool sub", "/f");
  const elsewhere = addGrant(dir.path, "/p", R, "/g");
  const otherPlugin = addGrant(dir.path, "/p", "plugin calcx tool add", "/h");
  expect(revokeGrantsOfFolder(dir.path, "calc", "/f")).toBe(3);
  expect(readGrants(dir.path)).toEqual([legacy[1]!, elsewhere, otherPlugin]);
});

test("a corrupt permissions.json: every read and change refuses, naming it the permissions file", () => {
  using dir = tempDir();
  const path = permissionsPath(dir.path);
  writeFileSync(path, "{ not json");
  const calls: [string, () => unknown][] = [
    ["readGrants", () => readGrants(dir.path)],
    ["hasGrant", () => hasGrant(dir.path, "/p", R, "/f")],
    ["addGrant", () => addGrant(dir.path, "/p", R, "/f")],
    ["revokeGrant", () => revokeGrant(dir.path, R, null)],
    ["revokeGrantsOfFolder", () => revokeGrantsOfFolder(dir.path, "calc", "/f")],
  ];
  for (const [name, call] of calls) {
    let message = "";
    try {
      call();
    } catch (error) {
      message = (error as Error).message;
    }
    expect([name, message.startsWith(`the permissions file ${path} is corrupt: `)]).toEqual([name, true]);
  }
  expect(readFileSync(path, "utf8")).toBe("{ not json"); // left as it was
});
