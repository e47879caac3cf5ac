/**
 * The folder module snapshots go in (src/host/private-folder.ts): only this user can write it, and
 * only this user or root any folder above it; anything else is refused, naming the folder at fault.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import { ensurePrivateFolder, privateFolderProblem, snapshotBase } from "../../src/host/private-folder.ts";
import { openSession, refusal, RUNTIME_DIR, writeModule } from "../helpers.ts";

const uid = process.getuid!();

/** A folder in /tmp itself (not $TMPDIR, which may be private), removed when disposed. */
function inTmp(): { path: string } & Disposable {
  const path = mkdtempSync("/tmp/cxagent-test-");
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

/** A private folder to build bad trees in: its ancestors (this user's home) are sound. */
function privateRoot(): { path: string } & Disposable {
  const path = mkdtempSync(join(RUNTIME_DIR, "private-folder-"));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

describe("a private folder", () => {
  test("one this user made 0700 under sound folders is private, and so is one still to be made there", () => {
    using root = privateRoot();
    expect(privateFolderProblem(root.path)).toBeNull();
    expect(privateFolderProblem(join(root.path, "a", "b"))).toBeNull();
    const made = ensurePrivateFolder(join(root.path, "a", "b"), "snapshots are written");
    expect(statSync(made).mode & 0o777).toBe(0o700);
    expect(statSync(join(root.path, "a")).mode & 0o777).toBe(0o700);
  });

  test("under /tmp (every user can write it), it is refused naming /tmp", () => {
    using dir = inTmp();
    expect(privateFolderProblem(join(dir.path, "run"))).toBe("/tmp, a folder above it, can be written by every user (mode 1777)");
    const error = (() => {
      try {
        ensurePrivateFolder(join(dir.path, "run"), "snapshots are written");
      } catch (e) {
        return e;
      }
    })();
    expect(isCxError(error, "E_STATE")).toBe(true);
    expect((error as Error).message).toBe(`refusing to use ${join(dir.path, "run")}, where snapshots are written: /tmp, a folder above it, can be written by every user (mode 1777), so another user could plant files (a node_modules) that the plugin would import`);
    expect(statSync(dir.path).isDirectory()).toBe(true);
  });

  test("a group-writable folder above, a folder above that another user owns, and a folder others can open are each refused by name", () => {
    using root = privateRoot();
    const group = join(root.path, "group");
    mkdirSync(join(group, "inner"), { recursive: true, mode: 0o700 });
    chmodSync(group, 0o770);
    expect(privateFolderProblem(join(group, "inner"))).toBe(`${group}, a folder above it, can be written by its group (mode 0770)`);
    const leaf = join(root.path, "open");
    mkdirSync(leaf, { mode: 0o755 });
    chmodSync(leaf, 0o755);
    expect(privateFolderProblem(leaf)).toBe(`${leaf} can be opened by other users (mode 0755); it must be 0700`);
    if (uid === 0) {
      const foreign = join(root.path, "foreign");
      mkdirSync(join(foreign, "inner"), { recursive: true, mode: 0o700 });
      chownSync(foreign, 65534, 65534);
      expect(privateFolderProblem(join(foreign, "inner"))).toBe(`${foreign}, a folder above it, belongs to uid 65534, neither this user (uid 0) nor root`);
      chownSync(leaf, 65534, 65534);
      chmodSync(leaf, 0o700);
      expect(privateFolderProblem(leaf)).toBe(`${leaf} belongs to uid 65534, not to this user (uid 0)`);
    }
  });

  test("$XDG_RUNTIME_DIR is used only when it exists and is private; else the state folder's run/", () => {
    using root = privateRoot();
    using dir = inTmp();
    expect(snapshotBase("/state", { XDG_RUNTIME_DIR: root.path })).toBe(join(root.path, "cxagent"));
    expect(snapshotBase("/state", { XDG_RUNTIME_DIR: dir.path })).toBe("/state/run"); // under /tmp
    expect(snapshotBase("/state", { XDG_RUNTIME_DIR: join(root.path, "missing") })).toBe("/state/run");
    expect(snapshotBase("/state", { XDG_RUNTIME_DIR: "relative" })).toBe("/state/run");
    expect(snapshotBase("/state", {})).toBe("/state/run");
  });

  test("a module plugin whose snapshot folder would be under /tmp is refused at load, naming /tmp; a native one is not concerned", async () => {
    using dir = inTmp();
    const folder = writeModule(dir.path, "plain", `export default { start() {}, invoke() { return { success: true, output: {} }; }, stop() {} };`);
    await using session = await openSession({ snapshotDir: join(dir.path, "snapshots") });
    const error = await refusal(session.load(folder));
    expect(isCxError(error, "E_STATE")).toBe(true);
    expect(error.message).toContain("/tmp, a folder above it, can be written by every user (mode 1777)");
    expect(error.hint).toContain("$XDG_RUNTIME_DIR");
  });
});
