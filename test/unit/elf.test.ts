import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ElfError, readDynamic, readExports } from "../../src/elf/elf.ts";
import { fixture, fixtureLibrary } from "../helpers.ts";

const library = () => readFileSync(join(fixture("with-dependency"), "with-dependency.so"));

test("reads what the loader acts on: needed libraries, soname, rpath, runpath", () => {
  expect(readDynamic(library())).toMatchObject({ needed: ["libgreeting.so", "libc.so.6"], soname: null, rpath: null, runpath: "$ORIGIN" });
  expect(readDynamic(readFileSync(join(fixture("with-dependency"), "libgreeting.so")))).toMatchObject({ soname: "libgreeting.so", needed: ["libc.so.6"] });
  expect(readDynamic(readFileSync(join(fixture("outside-rpath"), "outside-rpath.so")))).toMatchObject({ rpath: fixture("outside-lib"), runpath: null });
});

test.each([
  ["not an ELF file", (b: Buffer) => b.fill(0x41, 0, 4), "it does not start with the ELF magic bytes"],
  ["cut short", (b: Buffer) => b.subarray(0, 40), "its ELF header is cut short"],
  ["32-bit", (b: Buffer) => b.fill(1, 4, 5), "it is a 32-bit ELF file"],
  ["big-endian", (b: Buffer) => b.fill(2, 5, 6), "it is a big-endian ELF file"],
  ["an executable", (b: Buffer) => (b.writeUInt16LE(2, 16), b), "not a shared object"],
  ["program headers past the end", (b: Buffer) => (b.writeBigUInt64LE(BigInt(b.length), 32), b), "the program header table lies past the end of the file"],
  ["truncated after its headers", (b: Buffer) => b.subarray(0, 1024), "lies past the end of the file"],
])("refuses %s, saying why", (_what, spoil, message) => {
  const bytes = spoil(Buffer.from(library()));
  expect(() => readDynamic(bytes)).toThrow(ElfError);
  expect(() => readDynamic(bytes)).toThrow(message);
});

test("a dynamic section without DT_NULL, or a string outside its table, is refused", () => {
  const bytes = Buffer.from(library());
  // find PT_DYNAMIC and overwrite its terminating entry, then a DT_NEEDED offset
  const phoff = Number(bytes.readBigUInt64LE(32));
  const phnum = bytes.readUInt16LE(56);
  let dynamic = -1;
  let size = 0;
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * 56;
    if (bytes.readUInt32LE(at) === 2) {
      dynamic = Number(bytes.readBigUInt64LE(at + 8));
      size = Number(bytes.readBigUInt64LE(at + 32));
    }
  }
  expect(dynamic).toBeGreaterThan(0);
  const unterminated = Buffer.from(bytes);
  for (let at = dynamic; at + 16 <= dynamic + size; at += 16) if (unterminated.readBigInt64LE(at) === 0n) unterminated.writeBigInt64LE(0x6fffffffn, at);
  expect(() => readDynamic(unterminated)).toThrow("does not end with DT_NULL");
  const farString = Buffer.from(bytes);
  for (let at = dynamic; at + 16 <= dynamic + size; at += 16) if (farString.readBigInt64LE(at) === 1n) farString.writeBigUInt64LE(1n << 40n, at + 8);
  expect(() => readDynamic(farString)).toThrow("its DT_NEEDED points past the end of the string table");
});

test("reads the names a library exports from its dynamic symbol table, as dlsym would find them", () => {
  const exports = readExports(readFileSync(fixtureLibrary("echo")));
  expect(exports.filter((n) => n.startsWith("cxagent_plugin_")).sort()).toEqual([
    "cxagent_plugin_abi_version", "cxagent_plugin_describe", "cxagent_plugin_free", "cxagent_plugin_gate", "cxagent_plugin_invoke", "cxagent_plugin_start", "cxagent_plugin_stop",
  ]);
  // imports are not exports: echo calls strdup, it does not define it
  expect(exports).not.toContain("strdup");
  expect(readExports(readFileSync(fixtureLibrary("cortex-basic")))).toContain("cortex_plugin_init");
  // the fixture's own static functions are not exported
  expect(readExports(readFileSync(fixtureLibrary("cortex-basic")))).not.toContain("buffer_free");
});

test("a symbol table the hash tables place past the end of the file is refused, not read", () => {
  const bytes = Buffer.from(readFileSync(fixtureLibrary("cortex-basic")));
  const { dynamic, size } = dynamicSegment(bytes);
  // DT_GNU_HASH (and DT_HASH) point the table's size far away: the reader must stop at the file's end
  for (let at = dynamic; at + 16 <= dynamic + size; at += 16) {
    const tag = bytes.readBigInt64LE(at);
    if (tag === 0x6ffffef5n || tag === 4n) bytes.writeBigUInt64LE(1n << 40n, at + 8);
  }
  expect(() => readExports(bytes)).toThrow(ElfError);
});

function dynamicSegment(bytes: Buffer): { dynamic: number; size: number } {
  const phoff = Number(bytes.readBigUInt64LE(32));
  const phnum = bytes.readUInt16LE(56);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * 56;
    if (bytes.readUInt32LE(at) === 2) return { dynamic: Number(bytes.readBigUInt64LE(at + 8)), size: Number(bytes.readBigUInt64LE(at + 32)) };
  }
  throw new Error("no PT_DYNAMIC");
}

test("a dynamic entry the loader reads once that appears exactly twice is refused, naming it", () => {
  // with-dependency.so has two DT_NEEDED entries and one DT_RUNPATH: both needed ones become the
  // same tag, or one of them a second DT_RUNPATH
  const bytes = Buffer.from(library());
  const phoff = Number(bytes.readBigUInt64LE(32));
  const phnum = bytes.readUInt16LE(56);
  let dynamic = -1;
  let size = 0;
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * 56;
    if (bytes.readUInt32LE(at) === 2) {
      dynamic = Number(bytes.readBigUInt64LE(at + 8));
      size = Number(bytes.readBigUInt64LE(at + 32));
    }
  }
  const needed: number[] = [];
  for (let at = dynamic; at + 16 <= dynamic + size; at += 16) if (bytes.readBigInt64LE(at) === 1n) needed.push(at);
  expect(needed).toHaveLength(2);
  const twoSonames = Buffer.from(bytes);
  for (const at of needed) twoSonames.writeBigInt64LE(14n, at); // DT_SONAME
  expect(() => readDynamic(twoSonames)).toThrow("its dynamic section has 2 DT_SONAME entries");
  const twoRunpaths = Buffer.from(bytes);
  twoRunpaths.writeBigInt64LE(29n, needed[0]!); // DT_RUNPATH
  expect(() => readDynamic(twoRunpaths)).toThrow("its dynamic section has 2 DT_RUNPATH entries");
  const oneSoname = Buffer.from(bytes);
  oneSoname.writeBigInt64LE(14n, needed[0]!);
  expect(readDynamic(oneSoname).soname).toBe("libgreeting.so");
});
