/**
 * Where cxagent writes what a plugin host reads from disk (a module plugin's snapshot): a folder
 * that only this user can write, and whose every ancestor only this user or root can write. Bun
 * resolves a package an import names by walking up from the importing file, through each
 * ancestor's `node_modules`; under a shared folder such as /tmp, another local user could plant
 * one there and have it run as this user.
 *
 * The folder is `$XDG_RUNTIME_DIR/cxagent` when $XDG_RUNTIME_DIR is private (this user's, 0700,
 * its ancestors sound), else `<state folder>/run`. Its ancestors are checked at every use (owner
 * this user or root, writable by neither group nor others); a bad one is refused by name.
 */
import { existsSync, lstatSync, mkdirSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { CxError } from "../errors.ts";

/** What is wrong with `folder` as a private folder of this user's, or null. It need not exist. */
export function privateFolderProblem(folder: string, uid = process.getuid?.() ?? 0): string | null {
  // The folders that exist, from the nearest one up: what does not exist yet, we would create 0700.
  let existing = folder;
  for (;;) {
    try {
      existing = realpathSync(existing);
      break;
    } catch {
      const up = dirname(existing);
      if (up === existing) return `no part of ${folder} exists`;
      existing = up;
    }
  }
  const own = existing === realpathOr(folder);
  for (let path = existing; ; path = dirname(path)) {
    let stat;
    try {
      stat = lstatSync(path);
    } catch (error) {
      return `${path} cannot be examined (${(error as Error).message})`;
    }
    const mode = `mode ${(stat.mode & 0o7777).toString(8).padStart(4, "0")}`;
    if (!stat.isDirectory()) return `${path} is not a folder`;
    if (path === existing && own) {
      if (stat.uid !== uid) return `${path} belongs to uid ${stat.uid}, not to this user (uid ${uid})`;
      if ((stat.mode & 0o077) !== 0) return `${path} can be opened by other users (${mode}); it must be 0700`;
    } else {
      if (stat.uid !== uid && stat.uid !== 0) return `${path}, a folder above it, belongs to uid ${stat.uid}, neither this user (uid ${uid}) nor root`;
      if ((stat.mode & 0o022) !== 0) return `${path}, a folder above it, can be written by ${stat.mode & 0o002 ? "every user" : "its group"} (${mode})`;
    }
    if (path === "/") return null;
  }
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** $XDG_RUNTIME_DIR/cxagent when $XDG_RUNTIME_DIR is private, else `<stateDir>/run`. */
export function snapshotBase(stateDir: string, env: Record<string, string | undefined> = process.env): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && runtime.startsWith("/") && existsSync(runtime) && privateFolderProblem(runtime) === null) return join(runtime, "cxagent");
  return join(stateDir, "run");
}

/**
 * Makes `folder` (0700, with any missing parent) and returns its real path, after checking that
 * it and its ancestors are private; throws E_STATE naming the first one that is not.
 */
export function ensurePrivateFolder(folder: string, what: string): string {
  const before = privateFolderProblem(folder);
  if (before === null) {
    try {
      mkdirSync(folder, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new CxError("E_STATE", `cannot make ${folder}, where ${what}: ${(error as Error).message}`, {
        hint: "check that the state folder is writable, or choose another ($CXAGENT_STATE_DIR, or the session's stateDir)",
        next: { do: "choose-folder", which: "state", path: folder },
      });
    }
  }
  const problem = before ?? privateFolderProblem(folder);
  if (problem !== null) {
    throw new CxError("E_STATE", `refusing to use ${folder}, where ${what}: ${problem}, so another user could plant files (a node_modules) that the plugin would import`, {
      hint: "use a state folder that only you can write, all the way up ($CXAGENT_STATE_DIR, or the session's stateDir; the default is under your home), or set $XDG_RUNTIME_DIR to a private folder (0700, yours)",
      details: { folder },
      next: { do: "choose-folder", which: "state", path: folder },
    });
  }
  return realpathSync(folder);
}
