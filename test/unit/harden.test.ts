/**
 * plugin-host/harden.ts: what a plugin host gives up before any plugin byte runs (SPEC §8):
 * CAP_SYS_PTRACE from every capability set of its thread, the bounding set where it may, and
 * being dumpable. Each case is a real process started with the capabilities set up by setpriv
 * (root with the capability ambient and inheritable too, root unable to change its bounding set,
 * nobody); what could not be done is refused, as a libc that fails each step shows. The hosts
 * cxagent starts are checked in test/integration/descriptors.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { STRYKER, tempDir } from "../helpers.ts";
import { harden } from "../../src/plugin-host/harden.ts";
import type { Libc } from "../../src/plugin-host/libc.ts";

const SRC = join(import.meta.dir, "../../src/plugin-host");
const SETS = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] as const;
type Sets = Record<(typeof SETS)[number], boolean>;

/** harden() in a process started as `prefix` says; whether CAP_SYS_PTRACE is in each set before and after, and the dumpable flag. */
function hardenIn(prefix: string[]): { refused: string | null; before: Sets; after: Sets; dumpable: number } {
  // nobody must read the modules: copies in a folder anyone may enter (the checkout, or Stryker's sandbox, may be private)
  using readable = tempDir();
  chmodSync(readable.path, 0o755);
  for (const name of ["harden.ts", "libc.ts"]) {
    copyFileSync(join(SRC, name), join(readable.path, name));
    chmodSync(join(readable.path, name), 0o644);
  }
  const code = `
import { harden } from ${JSON.stringify(join(readable.path, "harden.ts"))};
import { openLibc } from ${JSON.stringify(join(readable.path, "libc.ts"))};
import { readFileSync } from "node:fs";
const sets = () => {
  const status = readFileSync("/proc/thread-self/status", "utf8");
  return Object.fromEntries(${JSON.stringify(SETS)}.map((n) => [n, ((BigInt("0x" + new RegExp("^" + n + ":\\\\s*([0-9a-f]+)$", "m").exec(status)[1]) >> 19n) & 1n) === 1n]));
};
const libc = openLibc();
const before = sets();
const refused = harden(libc);
console.log(JSON.stringify({ refused, before, after: sets(), dumpable: libc.prctl(3) }));`;
  const r = Bun.spawnSync([...prefix, process.execPath, "-e", code], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...STRYKER }, stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`the process failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString());
}

const none: Sets = { CapInh: false, CapPrm: false, CapEff: false, CapBnd: false, CapAmb: false };
const isRoot = process.getuid?.() === 0;

describe("in real processes", () => {
  test.if(isRoot)("root: the capability leaves every set, the bounding set included; not dumpable", () => {
    const r = hardenIn([]);
    expect(r.before).toMatchObject({ CapPrm: true, CapEff: true, CapBnd: true });
    expect(r).toMatchObject({ refused: null, after: none, dumpable: 0 });
  });

  test.if(isRoot)("root holding it ambient and inheritable too: it leaves those as well", () => {
    const r = hardenIn(["setpriv", "--inh-caps", "+sys_ptrace", "--ambient-caps", "+sys_ptrace"]);
    expect(r.before).toEqual({ CapInh: true, CapPrm: true, CapEff: true, CapBnd: true, CapAmb: true });
    expect(r).toMatchObject({ refused: null, after: none, dumpable: 0 });
  });

  test.if(isRoot)("root without CAP_SETPCAP cannot narrow its bounding set: that alone is no refusal", () => {
    const r = hardenIn(["setpriv", "--bounding-set", "-setpcap"]);
    expect(r.before).toMatchObject({ CapEff: true, CapBnd: true });
    expect(r).toMatchObject({ refused: null, after: { ...none, CapBnd: true }, dumpable: 0 });
  });

  test.if(isRoot)("an ordinary user (nobody): nothing to drop; not dumpable", () => {
    const r = hardenIn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    expect(r.before).toEqual({ ...none, CapBnd: true });
    expect(r).toMatchObject({ refused: null, after: { ...none, CapBnd: true }, dumpable: 0 });
  });
});

/** A libc whose /proc status shows `caps` (each set's CAP_SYS_PTRACE bit) and whose calls do nothing but answer `answers`. */
function fakeLibc(caps: Partial<Record<keyof Sets, boolean | null>> | null, answers: { dumpable?: number; capget?: number; bset?: number } = {}): Libc & { calls: number[][] } {
  const calls: number[][] = [];
  const bit = (on: boolean | undefined | null) => (on ? (1n << 19n) | (1n << 8n) : 1n << 8n).toString(16);
  return {
    calls,
    readText: () => (caps === null ? null : SETS.filter((n) => caps[n] !== null).map((n) => `${n}:\t${bit(caps[n]!).padStart(16, "0")}`).join("\n") + "\n"),
    prctl: (option: number, a = 0, b = 0) => {
      calls.push([option, a, b]);
      return option === 3 ? (answers.dumpable ?? 0) : option === 23 ? (answers.bset ?? 1) : 0;
    },
    capget: () => (calls.push([-1]), answers.capget ?? 0),
    capset: () => (calls.push([-2]), 0),
  } as unknown as Libc & { calls: number[][] };
}

describe("what could not be done is refused", () => {
  test("its capabilities cannot be read", () => {
    expect(harden(fakeLibc(null))).toBe("it could not give up CAP_SYS_PTRACE or make itself non-dumpable: Error: /proc/thread-self/status could not be read");
  });
  test("the capability is still held in any of its sets", () => {
    for (const set of ["CapInh", "CapPrm", "CapEff", "CapAmb"] as const) expect([set, harden(fakeLibc({ [set]: true }))]).toEqual([set, "it could not drop CAP_SYS_PTRACE"]);
  });
  test("still in the bounding set though it could drop it (CAP_SETPCAP effective)", () => {
    expect(harden(fakeLibc({ CapBnd: true }))).toBe("it could not drop CAP_SYS_PTRACE from its bounding set");
  });
  test("still dumpable", () => {
    expect(harden(fakeLibc({}, { dumpable: 1 }))).toBe("it could not make itself non-dumpable");
  });
  test("the calls it makes: the bounding set read, then dropped while there; the ambient set lowered; dumpable off", () => {
    const libc = fakeLibc({});
    expect(harden(libc)).toBeNull();
    expect(libc.calls).toEqual([[23, 19, 0], [24, 19, 0], [47, 3, 19], [4, 0, 0], [3, 0, 0]]);
    const absent = fakeLibc({}, { bset: 0 });
    harden(absent);
    expect(absent.calls).toEqual([[23, 19, 0], [47, 3, 19], [4, 0, 0], [3, 0, 0]]);
  });
  test("the capability sets are read and written (capget, capset) only where it is held; a failed capget writes nothing", () => {
    const held = fakeLibc({ CapPrm: true });
    harden(held);
    expect(held.calls.filter((c) => c[0]! < 0)).toEqual([[-1], [-2]]);
    const failing = fakeLibc({ CapPrm: true }, { capget: -1 });
    expect(harden(failing)).toBe("it could not drop CAP_SYS_PTRACE");
    expect(failing.calls.filter((c) => c[0]! < 0)).toEqual([[-1]]);
  });
  test("a set the kernel does not show (CapAmb before Linux 4.3) is an empty one", () => {
    expect(harden(fakeLibc({ CapAmb: null }))).toBeNull();
  });
});
