/**
 * src/trust/loader.ts: what glibc's loader knows before it looks where a plugin chose. Its cache
 * read from files written here in glibc's format (new, and old followed by new), each broken in
 * one way; its default folders; the libraries the plugin host has loaded already. The real cache
 * of this machine is read by test/integration/dependency-edges.test.ts.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { neededBy, readSystemLoader, systemLoader } from "../../src/trust/loader.ts";
import { tempDir } from "../helpers.ts";

const X86 = 62;
const ARM = 183;
const RISCV = 243;

interface Entry {
  flags: number;
  name: string;
  path: string;
  /** Where the name or the path string lies: past the end of the file, or unterminated. */
  broken?: "name-past-end" | "path-past-end" | "path-unterminated";
}

/** glibc's new cache table (cache_file_new): a 48-byte header, 24-byte entries, then the strings, offsets from the table's start. */
function newTable(entries: Entry[], count = entries.length): Buffer {
  const head = Buffer.alloc(48);
  head.write("glibc-ld.so.cache1.1", 0, "latin1");
  head.writeUInt32LE(count, 20);
  const table = Buffer.alloc(entries.length * 24);
  const strings: Buffer[] = [];
  let at = 48 + table.length;
  const add = (text: string, terminated = true) => {
    const bytes = Buffer.from(terminated ? `${text}\0` : text);
    strings.push(bytes);
    const offset = at;
    at += bytes.length;
    return offset;
  };
  const tail: Buffer[] = [];
  entries.forEach((e, i) => {
    table.writeInt32LE(e.flags, i * 24);
    table.writeUInt32LE(e.broken === "name-past-end" ? 1 << 20 : add(e.name), i * 24 + 4);
    if (e.broken === "path-unterminated") {
      tail.push(Buffer.from(e.path));
      table.writeUInt32LE(0xfffffff, i * 24 + 8); // fixed below, once the strings' length is known
    } else table.writeUInt32LE(e.broken === "path-past-end" ? 1 << 20 : add(e.path), i * 24 + 8);
  });
  entries.forEach((e, i) => {
    if (e.broken === "path-unterminated") table.writeUInt32LE(at, i * 24 + 8);
  });
  return Buffer.concat([head, table, ...strings, ...tail]);
}

/** The old format's table (ld.so-1.7.0, 12-byte entries) before the new one, which starts 8-aligned. */
function oldThenNew(oldCount: number, next: Buffer | null): Buffer {
  const head = Buffer.alloc(16);
  head.write("ld.so-1.7.0", 0, "latin1");
  head.writeUInt32LE(oldCount, 12);
  const old = Buffer.concat([head, Buffer.alloc(oldCount * 12)]);
  const pad = Buffer.alloc((8 - (old.length % 8)) % 8);
  return next === null ? old : Buffer.concat([old, pad, next]);
}

function loaderOf(dir: string, bytes: Buffer | null) {
  const file = join(dir, "ld.so.cache");
  if (bytes) writeFileSync(file, bytes);
  return readSystemLoader(file);
}

function folders(dir: string) {
  for (const d of ["x86", "arm", "any", "old"]) mkdirSync(join(dir, d), { recursive: true });
  symlinkSync(join(dir, "x86"), join(dir, "link"));
  const real = realpathSync(dir);
  return {
    real,
    entries: [
      { flags: 0x0a03, name: "libx.so.1", path: join(dir, "arm/libx.so.1") },
      { flags: 0x0303, name: "libx.so.1", path: join(dir, "x86/libx.so.1") },
      { flags: 0x0003, name: "libw.so.1", path: join(dir, "any/libw.so.1") },
      { flags: 0x0301, name: "libv.so.1", path: join(dir, "old/libv.so.1") }, // libc5, not libc6
      { flags: 0x0303, name: "librel.so", path: "rel/librel.so" },
      { flags: 0x0303, name: "libl.so", path: join(dir, "link/libl.so") },
      { flags: 0x0303, name: "libgone.so", path: join(dir, "nowhere/libgone.so") },
      { flags: 0x0303, name: "libfar.so", path: join(dir, "x86/libfar.so"), broken: "path-past-end" },
      { flags: 0x0303, name: "libnear.so", path: join(dir, "x86/libnear.so"), broken: "name-past-end" },
      { flags: 0x0303, name: "libcut.so", path: join(dir, "x86/libcut.so"), broken: "path-unterminated" },
    ] satisfies Entry[],
  };
}

test("the new format: each name found for its machine, libc6 entries only, absolute paths only", () => {
  using dir = tempDir();
  const { entries } = folders(dir.path);
  const loader = loaderOf(dir.path, newTable(entries));
  expect(loader.cached("libx.so.1", X86)).toBe(join(dir.path, "x86/libx.so.1"));
  expect(loader.cached("libx.so.1", ARM)).toBe(join(dir.path, "arm/libx.so.1"));
  // a machine whose flags the table does not know: any libc6 entry, the first
  expect(loader.cached("libx.so.1", RISCV)).toBe(join(dir.path, "arm/libx.so.1"));
  expect(loader.cached("libw.so.1", RISCV)).toBe(join(dir.path, "any/libw.so.1"));
  expect(loader.cached("libw.so.1", X86)).toBeNull();
  expect(loader.cached("libv.so.1", X86)).toBeNull();
  expect(loader.cached("libv.so.1", RISCV)).toBeNull();
  expect(loader.cached("librel.so", X86)).toBeNull();
  expect(loader.cached("libl.so", X86)).toBe(join(dir.path, "link/libl.so"));
  expect(loader.cached("libfar.so", X86)).toBeNull();
  expect(loader.cached("libcut.so", X86)).toBeNull();
  expect(loader.cached("libnone.so", X86)).toBeNull();
});

test("a system folder: a default one, or one the cache sends a name to, by its real path", () => {
  using dir = tempDir();
  const { entries, real } = folders(dir.path);
  const loader = loaderOf(dir.path, newTable(entries));
  // every entry's folder, whatever its flags (ldconfig scanned it)
  for (const d of ["x86", "arm", "any", "old"]) expect([d, loader.isSystemDir(join(real, d))]).toEqual([d, true]);
  // a relative path, a folder that does not exist, the folder above them: none
  for (const d of ["rel", "nowhere", ""]) expect([d, loader.isSystemDir(join(real, d))]).toEqual([d, false]);
  expect(loader.isSystemDir(join(real, "link"))).toBe(false); // by its real path only
  for (const d of loader.defaultDirs.filter((d) => d !== "/lib64" && d !== "/usr/lib64")) expect([d, loader.isSystemDir(realpathSync(d))]).toEqual([d, true]);
  expect(loader.isSystemDir("/tmp")).toBe(false);
});

test("the old format followed by the new: the new table read where it starts, 8-aligned", () => {
  using dir = tempDir();
  const { entries } = folders(dir.path);
  for (const oldCount of [0, 1, 2, 3]) {
    const loader = loaderOf(join(dir.path, "x86"), oldThenNew(oldCount, newTable(entries)));
    expect([oldCount, loader.cached("libx.so.1", X86)]).toEqual([oldCount, join(dir.path, "x86/libx.so.1")]);
  }
});

test("a cache that cannot be read is an empty one: missing, the old format alone, cut short, a wrong magic, a count past its end", () => {
  using dir = tempDir();
  const { entries, real } = folders(dir.path);
  const whole = newTable(entries);
  const wrongMagic = Buffer.from(whole);
  wrongMagic.write("glibc-ld.so.cache1.0", 0, "latin1");
  const cases: [string, Buffer | null][] = [
    ["missing", null],
    ["old alone", oldThenNew(2, null)],
    ["old, its header cut", Buffer.from("ld.so-1.7.0\0\x02\0")],
    ["new, its header cut", whole.subarray(0, 47)],
    ["wrong magic", wrongMagic],
    ["a count past its end", newTable(entries, entries.length * 100)],
    ["entries cut", whole.subarray(0, 48 + entries.length * 24 - 1)],
  ];
  for (const [what, bytes] of cases) {
    const sub = join(dir.path, what.replace(/\W/g, "-"));
    mkdirSync(sub);
    const loader = loaderOf(sub, bytes);
    expect([what, loader.cached("libx.so.1", X86)]).toEqual([what, null]);
    expect([what, loader.isSystemDir(join(real, "x86"))]).toEqual([what, false]);
  }
  // exactly long enough: its entries are read
  expect(loaderOf(join(dir.path, "any"), Buffer.concat([whole.subarray(0, 48), whole.subarray(48, 48 + 24)])).cached("libx.so.1", ARM)).toBeNull(); // its strings lie past the end
  const one = newTable([{ flags: 0x0303, name: "libx.so.1", path: join(dir.path, "x86/libx.so.1") }]);
  expect(loaderOf(join(dir.path, "old"), one).cached("libx.so.1", X86)).toBe(join(dir.path, "x86/libx.so.1"));
});

test("the default folders in the loader's order, and the libraries the host has loaded: its executable's DT_NEEDED", () => {
  const triplet = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  const loader = systemLoader();
  expect(loader.defaultDirs).toEqual([`/lib/${triplet}`, `/usr/lib/${triplet}`, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]);
  expect(systemLoader()).toBe(loader); // read once
  expect([...loader.hostLoaded].sort()).toEqual([...new Set(neededBy(process.execPath))].sort());
  expect(loader.hostLoaded.has("libc.so.6")).toBe(true);
  expect(() => neededBy("/etc/hostname")).toThrow();
});

test("only `count` entries are read, though more follow; a table that ends the file exactly is read whole", () => {
  using dir = tempDir();
  const { entries } = folders(dir.path);
  const first = loaderOf(dir.path, newTable(entries.slice(1, 3), 1));
  expect(first.cached("libx.so.1", X86)).toBe(join(dir.path, "x86/libx.so.1"));
  expect(first.cached("libw.so.1", RISCV)).toBeNull();
  // one entry, its strings in the header's unused bytes (32 to 47), nothing after it
  const exact = newTable([]);
  const table = Buffer.alloc(24);
  table.writeInt32LE(0x0303, 0);
  table.writeUInt32LE(37, 4); // "q"
  table.writeUInt32LE(32, 8); // "/l/q"
  const head = Buffer.from(exact);
  head.writeUInt32LE(1, 20);
  head.write("/l/q\0q\0", 32, "latin1");
  const sub = join(dir.path, "exact");
  mkdirSync(sub);
  expect(loaderOf(sub, Buffer.concat([head, table])).cached("q", X86)).toBe("/l/q");
});

test("a cache cut inside its header's count is an empty one, not an error", () => {
  using dir = tempDir();
  const cut = Buffer.concat([Buffer.from("glibc-ld.so.cache1.1", "latin1"), Buffer.from([1, 0])]);
  expect(loaderOf(dir.path, cut).cached("libx.so.1", X86)).toBeNull();
});

test("reading an executable's DT_NEEDED leaves no descriptor open, read or refused", () => {
  const open = () => readdirSync("/proc/self/fd").length;
  const before = open();
  for (let i = 0; i < 3; i++) {
    neededBy(process.execPath);
    expect(() => neededBy("/etc/hostname")).toThrow();
  }
  expect(open()).toBeLessThanOrEqual(before); // (another test's descriptor may close meanwhile)
});

test("the compiled binary's own list of what it loads, where it is defined, is taken as it is", () => {
  const g = globalThis as { CXAGENT_EXECUTABLE_NEEDS?: readonly string[] };
  g.CXAGENT_EXECUTABLE_NEEDS = ["libfrom-the-build.so.1"];
  try {
    expect([...readSystemLoader().hostLoaded]).toEqual(["libfrom-the-build.so.1"]);
  } finally {
    delete g.CXAGENT_EXECUTABLE_NEEDS;
  }
  expect(readSystemLoader().hostLoaded.has("libc.so.6")).toBe(true);
});
