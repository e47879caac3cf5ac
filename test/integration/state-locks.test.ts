/**
 * No update is lost (SPEC §6.3, §11): every read → modify → rename of approvals.json and
 * permissions.json holds the file's lock, so writers in many processes at once keep every change,
 * and a writer killed while it holds the lock leaves nothing locked.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import { recordApproval } from "../../src/trust/approvals.ts";
import { cli, copyFixture, refusal, ROOT, tempDir, until } from "../helpers.ts";
import { withFileLock } from "../../src/lock.ts";

const WRITERS = 8;
const EACH = 50;

describe("concurrent writers", () => {
  test(`${WRITERS} processes × ${EACH} approvals and ${EACH} grants at once: all ${WRITERS * EACH} of each are kept`, async () => {
    using dir = tempDir();
    const state = dir.path;
    const writers = Array.from({ length: WRITERS }, (_, id) =>
      Bun.spawn([process.execPath, join(ROOT, "test/fixtures/state-writer.ts"), state, String(id), String(EACH)], { stdout: "inherit", stderr: "inherit" }),
    );
    await until(() => writers.every((_, id) => existsSync(join(state, `ready-${id}`))), 30_000, "every writer to be ready");
    writeFileSync(join(state, "go"), "");
    expect(await Promise.all(writers.map((w) => w.exited))).toEqual(Array(WRITERS).fill(0));
    const approvals = JSON.parse(readFileSync(join(state, "approvals.json"), "utf8")).approvals;
    const grants = JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")).grants;
    expect(approvals.length).toBe(WRITERS * EACH);
    expect(new Set(approvals.map((a: { directory: string }) => a.directory)).size).toBe(WRITERS * EACH);
    expect(grants.length).toBe(WRITERS * EACH);
    expect(new Set(grants.map((g: { scope: string; rule: string }) => `${g.scope} ${g.rule}`)).size).toBe(WRITERS * EACH);
  });

  test("6 concurrent 'approve --hash' all say approved, and all 6 are stored", async () => {
    using dir = tempDir();
    const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state") };
    const folders = Array.from({ length: 6 }, (_, i) => copyFixture("echo", join(dir.path, `copy-${i}`)));
    const hash = (await cli(["describe", folders[0]!, "--json"], { env })).json().hash; // the same files in each folder
    const runs = await Promise.all(folders.map((f) => cli(["approve", f, "--hash", hash, "--json"], { env })));
    expect(runs.map((r) => [r.code, r.json().approved])).toEqual(Array(6).fill([0, true]));
    const stored = JSON.parse(readFileSync(join(dir.path, "state", "approvals.json"), "utf8")).approvals;
    expect(stored.map((a: { directory: string }) => a.directory).sort()).toEqual([...folders].sort());
  });
});

describe("a crashed writer", () => {
  test("killed with -9 while it holds the lock, it does not block the next writer", async () => {
    using dir = tempDir();
    const state = dir.path;
    const file = join(state, "approvals.json");
    const holder = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-lock.ts"), file], { stdout: "pipe", stderr: "inherit" });
    try {
      const line = new TextDecoder().decode((await holder.stdout.getReader().read()).value);
      expect(line).toBe(`locked ${holder.pid}\n`);
      // while it lives, a writer waits, then gives up naming the holder
      const waited = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never", 100)));
      expect(isCxError(waited, "E_STATE")).toBe(true);
      expect(waited.message).toBe(`${file} stayed locked for 0.1 s by process ${holder.pid}, so it was not changed`);
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
    // the kernel released the lock with the process: the next write goes through at once
    recordApproval(state, { plugin: "after", hash: "b".repeat(64), realFolder: "/after", files: [] });
    expect(JSON.parse(readFileSync(file, "utf8")).approvals.map((a: { plugin: string }) => a.plugin)).toEqual(["after"]);
  });
});

describe("the lock file", () => {
  test("a symbolic link planted in its place is refused, naming it, and nothing is created where it points", async () => {
    using dir = tempDir();
    const file = join(dir.path, "permissions.json");
    const lockPath = join(dir.path, ".permissions.json.lock");
    const target = join(dir.path, "elsewhere");
    symlinkSync(target, lockPath);
    const error = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never")));
    expect(isCxError(error, "E_STATE")).toBe(true);
    expect(error.message).toBe(`cannot write ${file}: its lock file ${lockPath} is a symbolic link, not a regular file, so it was not used`);
    expect(error.hint).toContain(`remove ${lockPath}`);
    expect(existsSync(target)).toBe(false);
  });

  test("a FIFO in its place is refused at once, not waited on", async () => {
    using dir = tempDir();
    const file = join(dir.path, "approvals.json");
    const lockPath = join(dir.path, ".approvals.json.lock");
    expect(Bun.spawnSync(["mkfifo", lockPath]).exitCode).toBe(0);
    const started = performance.now();
    const error = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never")));
    expect(performance.now() - started).toBeLessThan(5000); // a FIFO blocks open(2) for ever, and a held lock is waited on for 10 s
    expect(error.message).toBe(`cannot write ${file}: its lock file ${lockPath} is a FIFO, not a regular file, so it was not used`);
  });
});
