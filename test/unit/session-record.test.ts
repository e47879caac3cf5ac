/**
 * src/reaper/record.ts with real files: what a session record accepts and refuses, which files of
 * the sessions folder are records, how a record written before `pgid` and `sid` is read, and a
 * live session's record as it adds and forgets processes — written under the records' lock, left
 * alone when nothing changes, removed once it names nothing (without reading it again), and a
 * removal that fails for any reason but "already gone" reported.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { startTimeOf } from "../../src/reaper/proc.ts";
import { ownedOf, readRecord, type RecordedProcess, recordFiles, SessionRecord, sessionsDir } from "../../src/reaper/record.ts";
import { tempDir } from "../helpers.ts";

const host = (pid: number, fields: Partial<RecordedProcess> = {}): RecordedProcess => ({ pid, startTime: "100", plugin: "p", kind: "host", ...fields });
const record = (processes: object[], owner: object = { pid: 5, startTime: "1" }) => ({ owner, createdAt: "2026-01-01T00:00:00.000Z", processes });

describe("a record on disk", () => {
  test("read as written, pgid and sid 0 included; gone (or a dangling link) is null", () => {
    using dir = tempDir();
    const path = join(dir.path, "r.json");
    const data = record([host(1, { pgid: 0, sid: 0 }), host(300, { kind: "child", startTime: "0" })]);
    writeFileSync(path, JSON.stringify(data));
    expect(readRecord(path) as object).toEqual(data);
    expect(readRecord(join(dir.path, "none.json"))).toBeNull();
    symlinkSync(join(dir.path, "nothing"), join(dir.path, "dangling.json"));
    expect(readRecord(join(dir.path, "dangling.json"))).toBeNull();
  });

  test("refused, naming the session record and its path: each field that is not what a record holds", () => {
    using dir = tempDir();
    const path = join(dir.path, "r.json");
    const bad: [string, object][] = [
      ["pid 0", record([host(0)])],
      ["pid 1.5", record([host(1.5)])],
      ["pid as a string", record([{ ...host(1), pid: "300" }])],
      ["start time with a letter after", record([host(300, { startTime: "12a" })])],
      ["start time with a letter before", record([host(300, { startTime: "a12" })])],
      ["start time empty", record([host(300, { startTime: "" })])],
      ["start time a number", record([{ ...host(300), startTime: 100 }])],
      ["plugin not a string", record([{ ...host(300), plugin: 3 }])],
      ["kind unknown", record([{ ...host(300), kind: "member" }])],
      ["pgid negative", record([host(300, { pgid: -1 })])],
      ["pgid 1.5", record([host(300, { pgid: 1.5 })])],
      ["pgid a string", record([{ ...host(300), pgid: "300" }])],
      ["sid negative", record([host(300, { sid: -1 })])],
      ["sid 1.5", record([host(300, { sid: 1.5 })])],
      ["sid a string", record([{ ...host(300), sid: "300" }])],
      ["a process with another key", record([{ ...host(300), extra: 1 }])],
      ["owner pid 0", record([], { pid: 0, startTime: "1" })],
      ["owner pid 2.5", record([], { pid: 2.5, startTime: "1" })],
      ["owner with another key", record([], { pid: 5, startTime: "1", extra: 1 })],
      ["owner start time a number", record([], { pid: 5, startTime: 1 })],
      ["no createdAt", { owner: { pid: 5, startTime: "1" }, processes: [] }],
      ["createdAt a number", { ...record([]), createdAt: 1 }],
      ["processes not a list", { ...record([]), processes: {} }],
      ["another key", { ...record([]), extra: 1 }],
    ];
    for (const [what, data] of bad) {
      writeFileSync(path, JSON.stringify(data));
      let message = "";
      try {
        readRecord(path);
      } catch (error) {
        message = (error as Error).message;
      }
      expect([what, message]).toEqual([what, expect.stringContaining(`the session record ${path} is corrupt`)]);
    }
  });

  test("the records of a state folder: its sessions/*.json, sorted, never a hidden file (a temp file, the lock); none without the folder", () => {
    using dir = tempDir();
    expect(sessionsDir(dir.path)).toBe(join(dir.path, "sessions"));
    expect(recordFiles(dir.path)).toEqual([]);
    mkdirSync(join(dir.path, "sessions"));
    for (const name of [".1.2.tmp.json", ".records.lock", "c.json.tmp", "d.txt", "json"]) writeFileSync(join(dir.path, "sessions", name), "");
    // in order by name, whatever order the folder lists them in (made in order and in reverse: one of them is not the listing's)
    const names = Array.from({ length: 12 }, (_, i) => `${String(i).padStart(2, "0")}.json`);
    for (const name of [...names.slice(0, 6), ...names.slice(6).reverse()]) writeFileSync(join(dir.path, "sessions", name), "");
    expect(recordFiles(dir.path)).toEqual(names.map((name) => join(dir.path, "sessions", name)));
  });

  test("read by the reaper: a host recorded before pgid and sid existed led its own group and session; anything else as recorded", () => {
    expect(ownedOf(host(300))).toEqual({ pid: 300, startTime: "100", pgid: 300, sid: 300 });
    expect(ownedOf(host(300, { pgid: 400 }))).toEqual({ pid: 300, startTime: "100", pgid: 400, sid: undefined });
    expect(ownedOf(host(300, { sid: 400 }))).toEqual({ pid: 300, startTime: "100", pgid: undefined, sid: 400 });
    expect(ownedOf(host(300, { pgid: 0, sid: 0 }))).toEqual({ pid: 300, startTime: "100", pgid: 0, sid: 0 });
    expect(ownedOf(host(300, { kind: "child" }))).toEqual({ pid: 300, startTime: "100", pgid: undefined, sid: undefined });
    expect(ownedOf(host(300, { kind: "child", pgid: 300, sid: 7 }))).toEqual({ pid: 300, startTime: "100", pgid: 300, sid: 7 });
  });
});

describe("a live session's record", () => {
  const inode = (path: string) => statSync(path).ino;

  test("named by this process's pid and start time and a random tail, in the sessions folder; nothing written before a process is added", () => {
    using dir = tempDir();
    const a = new SessionRecord(dir.path);
    const b = new SessionRecord(dir.path);
    expect(a.path.startsWith(join(dir.path, "sessions") + "/")).toBe(true);
    expect(basename(a.path)).toMatch(new RegExp(`^${process.pid}-${startTimeOf(process.pid)}-[0-9a-z]{1,6}\\.json$`));
    expect(a.path).not.toBe(b.path);
    expect(a.processes).toEqual([]);
    expect(existsSync(join(dir.path, "sessions"))).toBe(false);
    a.remove([1, 2]); // nothing recorded: nothing to do
    expect(existsSync(join(dir.path, "sessions"))).toBe(false);
  });

  test("add writes the record at once, under the records' lock: its owner, when, and each process; a pid added again replaces its entry", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    const before = Date.now();
    r.add({ pid: 300, startTime: "100", pgid: 300, sid: 300 }, "one", "host");
    const onDisk = readRecord(r.path)!;
    expect(onDisk.owner).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid)! });
    expect(Date.parse(onDisk.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(onDisk.createdAt)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(onDisk.processes).toEqual([{ pid: 300, startTime: "100", plugin: "one", kind: "host", pgid: 300, sid: 300 }]);
    expect(existsSync(join(dir.path, "sessions", ".records.lock"))).toBe(true);
    // no pgid or sid: no such keys (a record without them is read as an older one)
    r.add({ pid: 301, startTime: "101" }, "one", "child");
    expect(JSON.parse(readFileSync(r.path, "utf8")).processes[1]).toEqual({ pid: 301, startTime: "101", plugin: "one", kind: "child" });
    expect(r.processes[1]).toStrictEqual({ pid: 301, startTime: "101", plugin: "one", kind: "child" });
    r.add({ pid: 300, startTime: "102", pgid: 300, sid: 300 }, "two", "host");
    expect(readRecord(r.path)!.processes).toEqual([
      { pid: 301, startTime: "101", plugin: "one", kind: "child" },
      { pid: 300, startTime: "102", plugin: "two", kind: "host", pgid: 300, sid: 300 },
    ]);
    expect(r.processes).toEqual(readRecord(r.path)!.processes);
    expect(readRecord(r.path)!.createdAt).toBe(onDisk.createdAt);
  });

  test("remove forgets the pids given; the file is left alone when none of them is there, and goes once it names nothing", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    for (const pid of [300, 301, 302]) r.add({ pid, startTime: "1" }, "p", "child");
    const first = inode(r.path);
    r.remove([999]);
    expect(inode(r.path)).toBe(first);
    r.remove([]);
    expect(inode(r.path)).toBe(first);
    r.remove([301, 999]);
    expect(readRecord(r.path)!.processes.map((p) => p.pid)).toEqual([300, 302]);
    expect(r.processes.map((p) => p.pid)).toEqual([300, 302]);
    r.remove([300, 302]);
    expect(existsSync(r.path)).toBe(false);
    expect(r.processes).toEqual([]);
    r.remove([300]); // nothing left: nothing to do
    expect(existsSync(r.path)).toBe(false);
  });

  test("remove reads the file under the lock: what is on disk decides, and a record the disk says names nothing more goes", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    r.add({ pid: 300, startTime: "1" }, "p", "child");
    r.add({ pid: 301, startTime: "1" }, "p", "child");
    const onDisk = readRecord(r.path)!;
    writeFileSync(r.path, JSON.stringify({ ...onDisk, processes: onDisk.processes.filter((p) => p.pid === 300) }));
    r.remove([300]);
    expect(existsSync(r.path)).toBe(false);
    expect(r.processes).toEqual([]);
  });

  test("remove of every process it names: the file goes without being read again; of nothing, it is not read at all", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    r.add({ pid: 300, startTime: "1" }, "p", "child");
    r.add({ pid: 301, startTime: "1" }, "p", "child");
    writeFileSync(r.path, "not JSON");
    r.remove([]);
    expect(readFileSync(r.path, "utf8")).toBe("not JSON");
    r.remove([301, 300]);
    expect(existsSync(r.path)).toBe(false);
    // already gone (reap removed it): no error
    r.add({ pid: 300, startTime: "1" }, "p", "child");
    rmSync(r.path);
    r.remove([300]);
    expect(existsSync(r.path)).toBe(false);
  });

  test("a record made corrupt under it: the next change refuses, naming the session record", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    r.add({ pid: 300, startTime: "1" }, "p", "child");
    writeFileSync(r.path, "not JSON");
    expect(() => r.add({ pid: 301, startTime: "1" }, "p", "child")).toThrow(`the session record ${r.path} is corrupt`);
    expect(readFileSync(r.path, "utf8")).toBe("not JSON");
  });

  test("a record that cannot be removed for another reason than its absence is an error", () => {
    using dir = tempDir();
    const r = new SessionRecord(dir.path);
    r.add({ pid: 300, startTime: "1" }, "p", "child");
    rmSync(r.path);
    mkdirSync(join(r.path, "inside"), { recursive: true });
    let code = "";
    try {
      r.remove([300]);
    } catch (error) {
      code = (error as NodeJS.ErrnoException).code ?? "";
    }
    expect(code).toBe("EISDIR");
  });
});
