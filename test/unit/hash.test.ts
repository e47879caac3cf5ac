import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { libraryBytes, loadSetHash } from "../../src/trust/hash.ts";
import { tempDir } from "../helpers.ts";

/** SPEC §6.3 written out a second time, byte by byte, to check the implementation against. */
function referenceHash(files: [string, string | Buffer][]): string {
  const h = createHash("sha256");
  const sorted = files.map(([p, c]) => [Buffer.from(p), Buffer.from(c)] as const).sort((a, b) => Buffer.compare(a[0], b[0]));
  for (const [path, content] of sorted) {
    const len = Buffer.alloc(4);
    len.writeInt32LE(path.length);
    const size = Buffer.alloc(8);
    size.writeBigInt64LE(BigInt(content.length));
    h.update(len).update(path).update(size).update(content);
  }
  return h.digest("hex");
}

function makeLoadSet(dir: string) {
  mkdirSync(join(dir, "lib", "deep"), { recursive: true });
  writeFileSync(join(dir, "plugin.so"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 255]));
  writeFileSync(join(dir, "plugin.plugin.json"), '{"name":"x"}');
  writeFileSync(join(dir, "lib", "deep", "data.bin"), "deep");
  writeFileSync(join(dir, "Zeta"), "capital letters sort before lowercase");
  writeFileSync(join(dir, "émoji-é"), "utf-8 names are hashed as bytes");
  writeFileSync(join(dir, ".hidden"), "dot files are part of the load set");
}

const CONTENTS: [string, string | Buffer][] = [
  ["plugin.so", Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 255])],
  ["plugin.plugin.json", '{"name":"x"}'],
  ["lib/deep/data.bin", "deep"],
  ["Zeta", "capital letters sort before lowercase"],
  ["émoji-é", "utf-8 names are hashed as bytes"],
  [".hidden", "dot files are part of the load set"],
];

test("matches the algorithm of SPEC §6.3, byte for byte", () => {
  using dir = tempDir();
  makeLoadSet(dir.path);
  const set = loadSetHash(dir.path, join(dir.path, "plugin.so"));
  expect(set.hash).toBe(referenceHash(CONTENTS));
  expect(set.files.map((f) => f.path)).toEqual([".hidden", "Zeta", "lib/deep/data.bin", "plugin.plugin.json", "plugin.so", "émoji-é"]);
  // every file with its size and own SHA-256, so an approval can later say which files changed
  for (const [path, content] of CONTENTS) {
    const bytes = Buffer.from(content);
    expect(set.files.find((f) => f.path === path)).toEqual({ path, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") });
  }
  expect(libraryBytes(set)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 255]));
  // the bytes shown and loaded are the ones hashed: the sidecar and ELF files are kept, others are not
  expect([...set.kept.keys()]).toEqual(["plugin.plugin.json", "plugin.so"]);
});

test("moving the folder keeps the hash; a byte, a name, a new README or a swapped library change it", () => {
  using dir = tempDir();
  const a = join(dir.path, "a");
  mkdirSync(a);
  makeLoadSet(a);
  const original = loadSetHash(a).hash;
  const moved = join(dir.path, "elsewhere", "b");
  mkdirSync(join(dir.path, "elsewhere"));
  renameSync(a, moved);
  expect(loadSetHash(moved).hash).toBe(original);

  const variant = (name: string, change: (d: string) => void) => {
    const d = join(dir.path, name);
    cpSync(moved, d, { recursive: true });
    change(d);
    return loadSetHash(d).hash;
  };
  const changed = [
    variant("byte", (d) => writeFileSync(join(d, "lib/deep/data.bin"), "deeP")),
    variant("name", (d) => renameSync(join(d, "Zeta"), join(d, "Zeta2"))),
    variant("readme", (d) => writeFileSync(join(d, "README.md"), "# hello")),
    variant("swap", (d) => writeFileSync(join(d, "plugin.so"), "another library")),
    variant("empty-file", (d) => writeFileSync(join(d, "empty"), "")),
  ];
  for (const h of changed) expect(h).not.toBe(original);
  expect(new Set(changed).size).toBe(changed.length);
});

test("a symbolic link is hashed by its target text and must stay inside the folder", () => {
  using dir = tempDir();
  const set = join(dir.path, "set");
  mkdirSync(set);
  writeFileSync(join(set, "real.so.1"), "library bytes");
  symlinkSync("real.so.1", join(set, "plugin.so"));
  const withLink = loadSetHash(set, join(set, "plugin.so"));
  expect(withLink.hash).toBe(referenceHash([["real.so.1", "library bytes"], ["plugin.so", "real.so.1"]]));
  // the library's bytes are those of the file the link points to
  expect(libraryBytes(withLink)?.toString()).toBe("library bytes");

  writeFileSync(join(dir.path, "outside"), "not in the load set");
  symlinkSync("../outside", join(set, "escape"));
  expect(() => loadSetHash(set)).toThrow("holds a symbolic link 'escape' → '../outside', and it points outside the folder");
});

test("a link into a sibling folder whose name begins with the plugin folder's is outside it", () => {
  using dir = tempDir();
  const set = join(dir.path, "plugin");
  mkdirSync(set);
  mkdirSync(join(dir.path, "plugin-evil"));
  writeFileSync(join(dir.path, "plugin-evil", "lib.so"), "not in the load set");
  symlinkSync("../plugin-evil/lib.so", join(set, "lib.so"));
  expect(() => loadSetHash(set)).toThrow("holds a symbolic link 'lib.so' → '../plugin-evil/lib.so', and it points outside the folder");
  // a link to the folder itself stays inside it
  rmSync(join(set, "lib.so"));
  symlinkSync(".", join(set, "self"));
  expect(loadSetHash(set).hash).toBe(referenceHash([["self", "."]]));
});

test("a dangling symbolic link refuses the load set", () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "a"), "a");
  symlinkSync("nowhere", join(dir.path, "broken"));
  expect(() => loadSetHash(dir.path)).toThrow("'broken' → 'nowhere', and it points nowhere");
});

test("what is kept in memory: sidecars, ELF files, README.md, a Cortex manifest.toml and the library, nothing else unless asked", () => {
  using dir = tempDir();
  const set = join(dir.path, "set");
  mkdirSync(join(set, "sub"), { recursive: true });
  const elf = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
  const files: Record<string, string | Buffer> = {
    "p.plugin.json": "{}",
    "sub/q.plugin.json": "{}",
    "lib.so": elf,
    "sub/dep.so.1": elf,
    "README.md": "# p",
    "sub/README.md": "# not the top one",
    "manifest.toml": "name = 'p'",
    "sub/manifest.toml": "not the top one",
    "notes.txt": "plain",
    "almost.elf": Buffer.from([0x7f, 0x45, 0x4c, 0x47, 2]),
    "elf-head-only": Buffer.from([0x7f, 0x45, 0x4c]),
    "library.bin": "the library, whatever its bytes",
    "empty": "",
  };
  for (const [path, content] of Object.entries(files)) writeFileSync(join(set, path), content);
  symlinkSync("lib.so", join(set, "link.so"));
  const loaded = loadSetHash(set, join(set, "library.bin"));
  expect([...loaded.kept.keys()].sort()).toEqual(["README.md", "lib.so", "library.bin", "manifest.toml", "p.plugin.json", "sub/dep.so.1", "sub/q.plugin.json"]);
  for (const [path, bytes] of loaded.kept) expect(Buffer.compare(bytes, Buffer.from(files[path]!))).toBe(0);
  expect(loaded.libraryPath).toBe("library.bin");
  expect([...loaded.links]).toEqual([["link.so", "lib.so"]]);
  // each entry's own size and SHA-256: a link by its target text
  const sha = (content: string | Buffer) => createHash("sha256").update(content).digest("hex");
  expect(loaded.files.find((f) => f.path === "link.so")).toEqual({ path: "link.so", size: 6, sha256: sha("lib.so") });
  expect(loaded.files.find((f) => f.path === "notes.txt")).toEqual({ path: "notes.txt", size: 5, sha256: sha("plain") });
  expect(loaded.files.find((f) => f.path === "empty")).toEqual({ path: "empty", size: 0, sha256: sha("") });
  expect(loaded.files.map((f) => f.path)).toEqual([...Object.keys(files), "link.so"].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  expect(loaded.hash).toBe(referenceHash([...Object.entries(files), ["link.so", "lib.so"]]));
  // keepAll keeps every file; without a library, none is the library
  const all = loadSetHash(set, undefined, { keepAll: true });
  expect([...all.kept.keys()].sort()).toEqual(Object.keys(files).sort());
  expect(all.libraryPath).toBeNull();
  expect(loadSetHash(set, undefined, { keepAll: false }).kept.has("notes.txt")).toBe(false);
});

test("a file larger than one read is hashed and kept whole", () => {
  using dir = tempDir();
  const big = Buffer.alloc((1 << 20) * 2 + 123);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff;
  big.set([0x7f, 0x45, 0x4c, 0x46], 0);
  writeFileSync(join(dir.path, "big.so"), big);
  const loaded = loadSetHash(dir.path);
  expect(loaded.hash).toBe(referenceHash([["big.so", big]]));
  expect(Buffer.compare(loaded.kept.get("big.so")!, big)).toBe(0);
});

test("a folder that is not there, or not a folder, is an error of the file system; one whose file vanishes is 'changed while it was being hashed'", () => {
  using dir = tempDir();
  expect(() => loadSetHash(join(dir.path, "absent"))).toThrow("changed while it was being hashed (ENOENT");
  writeFileSync(join(dir.path, "file"), "x");
  expect(() => loadSetHash(join(dir.path, "file", "below"))).toThrow("changed while it was being hashed (ENOTDIR");
  // any other error is passed on as it is
  mkdirSync(join(dir.path, "set"));
  writeFileSync(join(dir.path, "set", "a"), "a");
  let error: unknown;
  try {
    loadSetHash(join(dir.path, "set"), join(dir.path, "elsewhere-missing.so"));
  } catch (e) {
    error = e;
  }
  expect((error as Error).message).toContain("changed while it was being hashed");
  const refused = (() => {
    try {
      loadSetHash(dir.path + "\0bad");
    } catch (e) {
      return e as Error & { code?: string };
    }
    return null;
  })();
  expect(refused?.message).not.toContain("changed while it was being hashed");
});

test("a link outside the folder is refused naming the folder, and saying what to do", () => {
  using dir = tempDir();
  mkdirSync(join(dir.path, "set"));
  symlinkSync("/etc/hostname", join(dir.path, "set", "out"));
  let error: (Error & { hint?: string; code?: string }) | null = null;
  try {
    loadSetHash(join(dir.path, "set"));
  } catch (e) {
    error = e as Error & { hint?: string };
  }
  expect(error?.code).toBe("E_LOAD");
  expect(error?.message).toBe(`the plugin's folder ${join(dir.path, "set")} holds a symbolic link 'out' → '/etc/hostname', and it points outside the folder`);
  expect(error?.hint).toBe("every file a plugin loads must live inside its own folder, so that approving the folder covers it");
  try {
    loadSetHash(join(dir.path, "absent"));
  } catch (e) {
    error = e as Error & { hint?: string };
  }
  expect(error?.code).toBe("E_LOAD");
  expect(error?.message).toStartWith(`the plugin's folder ${join(dir.path, "absent")} changed while it was being hashed (ENOENT`);
  expect(error?.hint).toBe("try again once nothing is writing to it");
});

test("only the first read's first four bytes make an ELF file: exactly the magic is enough, the magic further in is not", () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "four"), Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  const big = Buffer.alloc((1 << 20) + 16, 0x20);
  big.set([0x7f, 0x45, 0x4c, 0x46], 1 << 20); // the magic at the start of the second read
  writeFileSync(join(dir.path, "big.txt"), big);
  expect([...loadSetHash(dir.path).kept.keys()]).toEqual(["four"]);
});

test("a library in a folder of the load set is named by its path with '/'", () => {
  using dir = tempDir();
  mkdirSync(join(dir.path, "lib", "x86_64"), { recursive: true });
  writeFileSync(join(dir.path, "lib", "x86_64", "p.bin"), "library");
  const loaded = loadSetHash(dir.path, join(dir.path, "lib", "x86_64", "p.bin"));
  expect(loaded.libraryPath).toBe("lib/x86_64/p.bin");
  expect(loaded.kept.get("lib/x86_64/p.bin")?.toString()).toBe("library");
});

test("a socket in the folder carries nothing to approve: left out, not opened", async () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "a"), "a");
  const server = createServer().listen(join(dir.path, "control.sock"));
  await new Promise((resolve) => server.once("listening", resolve));
  try {
    const loaded = loadSetHash(dir.path);
    expect(loaded.files.map((f) => f.path)).toEqual(["a"]);
    expect(loaded.hash).toBe(referenceHash([["a", "a"]]));
  } finally {
    server.close();
  }
});

test("hashing closes every file it opened", () => {
  using dir = tempDir();
  for (let i = 0; i < 40; i++) writeFileSync(join(dir.path, `f${i}`), `content ${i}`);
  const open = () => readdirSync("/proc/self/fd").length;
  const before = open();
  for (let round = 0; round < 3; round++) loadSetHash(dir.path);
  expect(open()).toBeLessThanOrEqual(before); // (another test's descriptor may close meanwhile)
});
