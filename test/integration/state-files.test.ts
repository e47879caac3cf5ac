/**
 * The files cxagent keeps in its state folder (SPEC §11): every change replaces a file whole (a
 * temp file beside it, then a rename), so neither a reader nor a crash ever meets half of one; and
 * a file that is not what cxagent wrote is reported by its path and left exactly as it was.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import * as v from "valibot";
import { readJsonStrict, writeJsonAtomic } from "../../src/files.ts";
import { recordFiles } from "../../src/reaper/record.ts";
import { loadSetHash } from "../../src/trust/hash.ts";
import { cli, fixture, openSession, refusal, tempDir } from "../helpers.ts";

const inode = (path: string) => statSync(path).ino;

/** A project folder and an empty state folder. */
function folders(dir: string) {
  const project = join(dir, "project");
  const state = join(dir, "state");
  mkdirSync(project);
  mkdirSync(state);
  return { project, state };
}

describe("a state file is replaced, never rewritten in place", () => {
  test("approvals.json, permissions.json and the session record get a new inode at every change; no temp file is left", async () => {
    using dir = tempDir();
    const { project, state } = folders(dir.path);
    const approvals = join(state, "approvals.json");
    const permissions = join(state, "permissions.json");
    // each load of a plugin not approved yet records an approval (the test's person says yes)
    await using session = await openSession({ cwd: project, stateDir: state });
    await session.load(fixture("echo"));
    const [record] = recordFiles(state);
    const before = { approvals: inode(approvals), record: inode(record!) };
    const gates = await session.load(fixture("gates"));
    expect(inode(approvals)).not.toBe(before.approvals);
    expect(inode(record!)).not.toBe(before.record);
    await gates.invoke("manifest_true", {}, { permission: "always" });
    const granted = inode(permissions);
    await gates.invoke("asks", {}, { permission: "always" });
    expect(inode(permissions)).not.toBe(granted);
    expect(JSON.parse(readFileSync(permissions, "utf8")).grants.length).toBe(2);
    // the lock files are kept on purpose (see src/lock.ts); nothing else may be left beside the state
    // but the cache of schemas found valid (json-schema/checked.ts), replaced the same way
    expect(readdirSync(state).filter((f) => !f.endsWith(".lock")).sort()).toEqual(["approvals.json", "checked-schemas.json", "permissions.json", "sessions"]);
    expect(readdirSync(join(state, "sessions")).filter((f) => !f.endsWith(".lock"))).toEqual([basename(record!)]);
  });

  test("every state file and its folder are the user's alone (0600, 0700), whatever the umask", async () => {
    using dir = tempDir();
    const { project, state } = folders(dir.path);
    const umask = process.umask(0o000); // the loosest: nothing is taken away from the modes asked for
    try {
      await using session = await openSession({ cwd: project, stateDir: state });
      const gates = await session.load(fixture("gates"));
      await gates.invoke("manifest_true", {}, { permission: "always" });
      const [record] = recordFiles(state);
      for (const file of [join(state, "approvals.json"), join(state, "permissions.json"), record!]) expect([file, statSync(file).mode & 0o777]).toEqual([file, 0o600]);
      const nested = join(dir.path, "new", "deeper", "file.json");
      writeJsonAtomic(nested, { x: 1 });
      expect(statSync(nested).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir.path, "new", "deeper")).mode & 0o777).toBe(0o700);
    } finally {
      process.umask(umask);
    }
  });

  test("a state file that cannot be read for any reason but its absence is an error naming it, never taken as empty", () => {
    using dir = tempDir();
    const schema = v.strictObject({ approvals: v.array(v.unknown()) });
    const empty = { approvals: [] };
    expect(readJsonStrict(join(dir.path, "absent.json"), schema, empty, "approvals file")).toBe(empty);
    const folder = join(dir.path, "approvals.json");
    mkdirSync(folder); // EISDIR
    expect(() => readJsonStrict(folder, schema, empty, "approvals file")).toThrow(`cannot read approvals file ${folder}: EISDIR`);
    const file = join(dir.path, "file");
    writeFileSync(file, "");
    const under = join(file, "approvals.json"); // ENOTDIR: not absent, a path that cannot be
    expect(() => readJsonStrict(under, schema, empty, "approvals file")).toThrow(`cannot read approvals file ${under}: ENOTDIR`);
  });

  test("a write that fails leaves no temp file behind", () => {
    using dir = tempDir();
    const target = join(dir.path, "approvals.json");
    mkdirSync(target); // a folder where the file belongs: the rename cannot replace it
    expect(() => writeJsonAtomic(target, { approvals: [] })).toThrow(`cannot write ${target}`);
    expect(readdirSync(dir.path)).toEqual(["approvals.json"]);
  });
});

describe("a state file that is not JSON is reported by its path and left byte for byte", () => {
  // what a torn write or a stray editor might leave: a JSON start, a NUL, invalid UTF-8
  const garbage = Buffer.concat([Buffer.from('{"entries": [\n'), Buffer.from([0x00, 0xff, 0xfe]), Buffer.from(" cut off")]);

  test("approvals.json: a load that would ask, and approve --hash, refuse naming the file", async () => {
    using dir = tempDir();
    const { project, state } = folders(dir.path);
    const file = join(state, "approvals.json");
    writeFileSync(file, garbage);
    {
      await using session = await openSession({ cwd: project, stateDir: state });
      const error = await refusal(session.load(fixture("echo")));
      expect(error.code).toBe("E_STATE");
      expect(error.message).toStartWith(`the approvals file ${file} is corrupt: it is not valid JSON`);
      expect(error.details).toEqual({ path: file });
    }
    const r = await cli(["approve", fixture("echo"), "--hash", loadSetHash(fixture("echo")).hash, "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(3);
    expect(r.json().error).toMatchObject({ code: "E_STATE", details: { path: file } });
    expect(readFileSync(file).equals(garbage)).toBe(true);
  });

  test("permissions.json: a call answered Always, and grants, refuse naming the file", async () => {
    using dir = tempDir();
    const { project, state } = folders(dir.path);
    const file = join(state, "permissions.json");
    writeFileSync(file, garbage);
    {
      await using session = await openSession({ cwd: project, stateDir: state });
      const gates = await session.load(fixture("gates"));
      const error = await refusal(gates.invoke("manifest_true", {}, { permission: "always" }));
      expect(error.code).toBe("E_STATE");
      expect(error.message).toStartWith(`the permissions file ${file} is corrupt: it is not valid JSON`);
    }
    for (const args of [["grants"], ["grants", "--revoke", "plugin gates tool manifest_true"]]) {
      const r = await cli([...args, "--json", "--cwd", project], { env: { CXAGENT_STATE_DIR: state } });
      expect(r.code).toBe(3);
      expect(r.json().error).toMatchObject({ code: "E_STATE", details: { path: file } });
    }
    expect(readFileSync(file).equals(garbage)).toBe(true);
  });

  test("a session record: reap and the next session report it by path and keep it", async () => {
    using dir = tempDir();
    const { state } = folders(dir.path);
    mkdirSync(join(state, "sessions"));
    const file = join(state, "sessions", "torn.json");
    writeFileSync(file, garbage);
    const r = await cli(["reap", "--json"], { env: { CXAGENT_STATE_DIR: state } });
    expect(r.code).toBe(0);
    expect(r.json().corrupt).toEqual([{ path: file, problem: expect.stringContaining(`the session record ${file} is corrupt: it is not valid JSON`) }]);
    await using session = await openSession({ stateDir: state });
    expect(session.reaped.corrupt).toEqual([{ path: file, problem: expect.stringContaining(`the session record ${file} is corrupt`) }]);
    expect(readFileSync(file).equals(garbage)).toBe(true);
  });
});
