/**
 * No update is lost (SPEC §6.3, §11): every read → modify → rename of approvals.json and
 * permissions.json holds the file's lock, so writers in many processes at once keep every change,
 * and a writer killed while it holds the lock leaves nothing locked.
 */
import { describe, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import { recordApproval } from "../../src/trust/approvals.ts";
import { cli, copyFixture, refusal, ROOT, tempDir, until } from "../helpers.ts";
import { tryLock, withFileLock } from "../../src/lock.ts";

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
      expect(waited.hint).toBe(`another cxagent is writing it; if process ${holder.pid} is stuck, end it and try again`);
      expect(waited.details).toEqual({ path: file, holder: holder.pid });
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

describe("the lock's edges (mutants of src/lock.ts)", () => {
  test("tryLock: taken by the first open file, refused to a second while the first holds it", () => {
    using dir = tempDir();
    const path = join(dir.path, "f");
    writeFileSync(path, "");
    const first = openSync(path, "r");
    const second = openSync(path, "r");
    try {
      expect(tryLock(first)).toBe(true);
      expect(tryLock(second)).toBe(false);
      closeSync(first);
      expect(tryLock(second)).toBe(true);
    } finally {
      for (const fd of [first, second]) {
        try {
          closeSync(fd);
        } catch {
          // closed above
        }
      }
    }
  });

  test("a folder, or a device, in the lock file's place is refused, naming it; a lock file that cannot be made says where to look", async () => {
    using dir = tempDir();
    const file = join(dir.path, "approvals.json");
    const lockPath = join(dir.path, ".approvals.json.lock");
    mkdirSync(lockPath);
    const folder = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never")));
    expect(folder.message).toBe(`cannot write ${file}: its lock file ${lockPath} is a folder, not a regular file, so it was not used`);
    expect(folder.hint).toBe(`cxagent makes that file itself; if you did not put it there, someone else may have: check who owns ${dir.path}, then remove ${lockPath}`);
    expect(folder.details).toEqual({ path: file, lockPath });
    rmSync(lockPath, { recursive: true });
    expect(Bun.spawnSync(["mknod", lockPath, "c", "1", "3"]).exitCode).toBe(0); // what /dev/null is
    const device = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never")));
    expect(device.message).toBe(`cannot write ${file}: its lock file ${lockPath} is a special file, not a regular file, so it was not used`);
    writeFileSync(join(dir.path, "plain"), "");
    const under = join(dir.path, "plain", "approvals.json");
    const cannot = await refusal(Promise.resolve().then(() => withFileLock(under, () => "never")));
    expect(isCxError(cannot, "E_STATE")).toBe(true);
    expect(cannot.message).toStartWith(`cannot write ${under}: its lock file ${join(dir.path, "plain", ".approvals.json.lock")} cannot be opened (`);
    expect(cannot.hint).toBe(`check that ${join(dir.path, "plain")} exists and is writable, or use another state folder`);
    expect(cannot.next).toEqual({ do: "choose-folder", which: "state", path: join(dir.path, "plain") });
  });

  test("a holder in no process the waiter can see (another pid namespace) is not named: the hint says only to try again", async () => {
    // /proc/locks, read from a pid namespace the holder is outside of, leaves its lock out.
    using dir = tempDir();
    const file = join(dir.path, "approvals.json");
    const waiter = join(dir.path, "waiter.ts");
    writeFileSync(
      waiter,
      `import { withFileLock } from ${JSON.stringify(join(ROOT, "src/lock.ts"))};\n` +
        `try { withFileLock(process.argv[2], () => "never", 100); } catch (e) { console.log(JSON.stringify({ message: e.message, hint: e.hint, details: e.details })); }\n`,
    );
    const holder = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-lock.ts"), file], { stdout: "pipe", stderr: "inherit" });
    try {
      expect(new TextDecoder().decode((await holder.stdout.getReader().read()).value)).toBe(`locked ${holder.pid}\n`);
      const run = Bun.spawn(["unshare", "--pid", "--fork", "--mount-proc", process.execPath, waiter, file], { stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(JSON.parse(out)).toEqual({
        message: `${file} stayed locked for 0.1 s, so it was not changed`,
        hint: "another cxagent is writing it; try again",
        details: { path: file, holder: null },
      });
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
  });

  test("the holder named is the one holding this lock, not another file's", async () => {
    using dir = tempDir();
    const other = join(dir.path, "other.json");
    const file = join(dir.path, "approvals.json");
    const hold = async (path: string) => {
      const proc = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/hold-lock.ts"), path], { stdout: "pipe", stderr: "inherit" });
      expect(new TextDecoder().decode((await proc.stdout.getReader().read()).value)).toBe(`locked ${proc.pid}\n`);
      return proc;
    };
    // an unrelated lock taken before this one, and one after: whichever /proc/locks lists first
    const before = await hold(other);
    const holder = await hold(file);
    const after = await hold(join(dir.path, "third.json"));
    try {
      const waited = await refusal(Promise.resolve().then(() => withFileLock(file, () => "never", 50)));
      expect(waited.message).toBe(`${file} stayed locked for 0.05 s by process ${holder.pid}, so it was not changed`);
    } finally {
      for (const p of [before, holder, after]) p.kill("SIGKILL");
      await Promise.all([before.exited, holder.exited, after.exited]);
    }
  });
});

