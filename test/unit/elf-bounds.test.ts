/**
 * src/elf/elf.ts against hand-made ELF files (test/elf-image.ts), each bound hit exactly: a part
 * that ends at the file's last byte is read, one byte more is refused; an entry the loader reads
 * once, present twice, is refused; a count that runs past its table is refused with the table's
 * name. The compiled fixtures (test/unit/elf.test.ts) show the reader on what a linker writes.
 */
import { describe, expect, test } from "bun:test";
import { closeSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bytesSource, ElfError, fileSource, looksLikeElf, readDynamic, readExports } from "../../src/elf/elf.ts";
import { DT, gnuHash, gnuHashOf, header, PT_DYNAMIC, PT_LOAD, PT_NOTE, programHeader, type SharedObject, sharedObject, sysvHash } from "../elf-image.ts";
import { tempDir } from "../helpers.ts";

const refused = (f: () => unknown, message: string) => {
  expect(f).toThrow(ElfError);
  expect(f).toThrow(message);
};

describe("the ELF header", () => {
  test("each of the four magic bytes is checked; four bytes alone are an ELF start but a header cut short", () => {
    const good = header();
    expect(looksLikeElf(good)).toBe(true);
    for (let i = 0; i < 4; i++) {
      const bad = Buffer.from(good);
      bad[i] = bad[i]! ^ 0x20;
      expect(looksLikeElf(bad)).toBe(false);
      refused(() => readDynamic(bad), "it does not start with the ELF magic bytes");
    }
    expect(looksLikeElf(good.subarray(0, 4))).toBe(true);
    expect(looksLikeElf(good.subarray(0, 3))).toBe(false);
    refused(() => readDynamic(good.subarray(0, 4)), "its ELF header is cut short");
    refused(() => readDynamic(good.subarray(0, 63)), "its ELF header is cut short");
    refused(() => readDynamic(new Uint8Array(0)), "it does not start with the ELF magic bytes");
  });

  test("a 64-byte header with no program headers is a library with nothing to load", () => {
    expect(readDynamic(header({ machine: 183 }))).toEqual({ needed: [], soname: null, rpath: null, runpath: null, noDefaultLib: false, machine: 183 });
    // no program headers at all, their size zero too
    expect(readDynamic(header({ phentsize: 0 })).needed).toEqual([]);
    expect(readExports(header())).toEqual([]);
  });

  test("class and byte order: 32-bit, an unknown class and big-endian are each refused by name", () => {
    refused(() => readDynamic(header({ class: 1 })), "it is a 32-bit ELF file; cxagent loads 64-bit libraries only");
    refused(() => readDynamic(header({ class: 3 })), "it is a unknown-class ELF file");
    refused(() => readDynamic(header({ data: 2 })), "it is a big-endian ELF file; cxagent loads little-endian libraries only");
    refused(() => readDynamic(header({ data: 0 })), "it is a big-endian ELF file");
  });

  test("a program only where one is asked for; a relocatable object never", () => {
    refused(() => readDynamic(header({ type: 2 })), "it is an ELF file of type 2, not a shared object (type 3); link it with -shared");
    expect(readDynamic(header({ type: 2 }), { executable: true }).needed).toEqual([]);
    expect(readDynamic(header({ type: 3 }), { executable: true }).needed).toEqual([]);
    refused(() => readDynamic(header({ type: 1 }), { executable: true }), "it is an ELF file of type 1, not a shared object");
    refused(() => readDynamic(header({ type: 4 }), { executable: false }), "of type 4");
    refused(() => readExports(header({ type: 2 })), "of type 2");
  });

  test("the program header table: PN_XNUM, entries too small, a table past the end, offsets past 2^53", () => {
    refused(() => readDynamic(header({ phnum: 0xffff })), "it has more program headers than cxagent reads (e_phnum = PN_XNUM)");
    refused(() => readDynamic(Buffer.concat([header({ phnum: 1, phentsize: 55 }), Buffer.alloc(55)])), "its program headers are 55 bytes each, less than the 56 an ELF64 header needs");
    // one PT_NOTE entry that ends exactly at the file's end is read; a byte less and it is not
    const note = programHeader({ type: PT_NOTE, offset: 0, vaddr: 0, filesz: 0 });
    expect(readDynamic(Buffer.concat([header({ phnum: 1 }), note])).needed).toEqual([]);
    refused(() => readDynamic(Buffer.concat([header({ phnum: 1 }), note]).subarray(0, 119)), "the program header table lies past the end of the file (120 > 119 bytes)");
    // entries larger than 56 bytes are stepped over by their own size
    const wide = Buffer.concat([header({ phnum: 2, phentsize: 64 }), programHeader({ type: PT_NOTE, offset: 0, vaddr: 0, filesz: 0 }, 64), programHeader({ type: PT_LOAD, offset: 0, vaddr: 0, filesz: 1000 }, 64)]);
    refused(() => readDynamic(wide), "loadable segment 1 lies past the end of the file (1000 > 192 bytes)");
    refused(() => readDynamic(header({ phoff: (1n << 53n) - 1n })), "the program header table lies past the end of the file");
    refused(() => readDynamic(header({ phoff: 1n << 53n })), "its e_phoff is out of range");
  });
});

describe("the program headers", () => {
  test("a loadable or dynamic segment ending exactly at the file's end is read; one byte past is refused by name", () => {
    const lib = sharedObject({ needed: ["liba.so"] });
    expect(readDynamic(lib.bytes).needed).toEqual(["liba.so"]);
    const loadTooLong = Buffer.from(lib.bytes);
    loadTooLong.writeBigUInt64LE(BigInt(lib.bytes.length + 1), lib.at.phoff + 32);
    refused(() => readDynamic(loadTooLong), `loadable segment 0 lies past the end of the file (${lib.bytes.length + 1} > ${lib.bytes.length} bytes)`);
    const dynamicTooLong = Buffer.from(lib.bytes);
    dynamicTooLong.writeBigUInt64LE(BigInt(lib.bytes.length - lib.at.dynamic + 1), lib.at.phoff + 56 + 32);
    refused(() => readDynamic(dynamicTooLong), "the dynamic segment lies past the end of the file");
    const dynamicFar = Buffer.from(lib.bytes);
    dynamicFar.writeBigUInt64LE(1n << 53n, lib.at.phoff + 56 + 32);
    refused(() => readDynamic(dynamicFar), "its p_filesz is out of range");
    const loadFar = Buffer.from(lib.bytes);
    loadFar.writeBigUInt64LE(1n << 53n, lib.at.phoff + 8);
    refused(() => readDynamic(loadFar), "its p_offset is out of range");
    const vaddrFar = Buffer.from(lib.bytes);
    vaddrFar.writeBigUInt64LE(1n << 53n, lib.at.phoff + 16);
    refused(() => readDynamic(vaddrFar), "its p_vaddr is out of range");
  });

  test("two dynamic segments are refused; a segment of another type is not read at all", () => {
    const twice = sharedObject({ needed: ["liba.so"], segments: [{ type: PT_DYNAMIC, offset: 0, vaddr: 0, filesz: 0 }] });
    refused(() => readDynamic(twice.bytes), "it has two dynamic segments");
    const note = sharedObject({ needed: ["liba.so"], segments: [{ type: PT_NOTE, offset: 1 << 30, vaddr: 0, filesz: 1 << 30 }] });
    expect(readDynamic(note.bytes).needed).toEqual(["liba.so"]);
  });

  test("no dynamic segment: nothing for the loader to resolve, and no exports", () => {
    const load = programHeader({ type: PT_LOAD, offset: 0, vaddr: 0, filesz: 120 });
    const bytes = Buffer.concat([header({ phnum: 1 }), load]);
    expect(readDynamic(bytes)).toMatchObject({ needed: [], soname: null, rpath: null, runpath: null, noDefaultLib: false });
    expect(readExports(bytes)).toEqual([]);
  });
});

describe("the dynamic section", () => {
  test("needed libraries in file order, soname, rpath, runpath and the machine", () => {
    const lib = sharedObject({ needed: ["liba.so.1", "libb.so.2", "libc.so.6"], soname: "libme.so.1", rpath: "$ORIGIN/r", runpath: "$ORIGIN/lib", machine: 62 });
    expect(readDynamic(lib.bytes)).toEqual({ needed: ["liba.so.1", "libb.so.2", "libc.so.6"], soname: "libme.so.1", rpath: "$ORIGIN/r", runpath: "$ORIGIN/lib", noDefaultLib: false, machine: 62 });
  });

  test("what is not there is null: a library that needs others but has no soname, rpath or runpath", () => {
    expect(readDynamic(sharedObject({ needed: ["liba.so"] }).bytes)).toEqual({ needed: ["liba.so"], soname: null, rpath: null, runpath: null, noDefaultLib: false, machine: 62 });
    expect(readDynamic(sharedObject({ soname: "libme.so" }).bytes)).toEqual({ needed: [], soname: "libme.so", rpath: null, runpath: null, noDefaultLib: false, machine: 62 });
  });

  test("its last entry, DT_NULL, ending at the segment's (and the file's) last byte is read; entries after DT_NULL are not", () => {
    const lib = sharedObject({ soname: "libme.so" });
    expect(readDynamic(lib.bytes).soname).toBe("libme.so");
    // a segment 8 bytes longer than its entries: the part entry at the end is not one
    const ragged = Buffer.concat([lib.bytes, Buffer.alloc(8, 0xff)]);
    ragged.writeBigUInt64LE(BigInt(lib.bytes.length - lib.at.dynamic + 8), lib.at.phoff + 56 + 32);
    ragged.writeBigUInt64LE(BigInt(ragged.length), lib.at.phoff + 32);
    expect(readDynamic(ragged).soname).toBe("libme.so");
    // after DT_NULL, a second DT_SONAME and a DT_FILTER: not entries
    const after = sharedObject({ soname: "libme.so", extra: [[DT.NULL, 0n], [DT.SONAME, 1n], [DT.FILTER, 1n]] });
    expect(readDynamic(after.bytes).soname).toBe("libme.so");
  });

  test("a dynamic section without DT_NULL is refused, the last entry a full one", () => {
    refused(() => readDynamic(sharedObject({ needed: ["liba.so"], unterminated: true }).bytes), "its dynamic section does not end with DT_NULL");
    const lib = sharedObject({ needed: ["liba.so"] });
    // the segment cut 1 byte short of its DT_NULL: that entry is not whole, so not read
    const cut = Buffer.from(lib.bytes);
    cut.writeBigUInt64LE(BigInt(lib.bytes.length - lib.at.dynamic - 1), lib.at.phoff + 56 + 32);
    refused(() => readDynamic(cut), "does not end with DT_NULL");
  });

  test("each entry the loader reads once, present exactly twice, is refused naming it; DT_NEEDED twice is fine", () => {
    const twice = (tag: bigint, value = 1n) => sharedObject({ needed: ["liba.so"], soname: "s", rpath: "r", runpath: "u", extra: [[tag, value]] }).bytes;
    refused(() => readDynamic(twice(DT.SONAME)), "its dynamic section has 2 DT_SONAME entries");
    refused(() => readDynamic(twice(DT.RPATH)), "its dynamic section has 2 DT_RPATH entries");
    refused(() => readDynamic(twice(DT.RUNPATH)), "its dynamic section has 2 DT_RUNPATH entries");
    refused(() => readDynamic(twice(DT.STRTAB, 0x1000n)), "its dynamic section has 2 DT_STRTAB entries");
    refused(() => readDynamic(twice(DT.STRSZ, 4n)), "its dynamic section has 2 DT_STRSZ entries");
    refused(() => readDynamic(sharedObject({ extra: [[DT.FLAGS_1, 0n], [DT.FLAGS_1, 0x800n]] }).bytes), "its dynamic section has 2 DT_FLAGS_1 entries");
    refused(() => readDynamic(sharedObject({ strings: ["f"], extra: [[DT.FILTER, 1n], [DT.FILTER, 1n]] }).bytes), "its dynamic section has 2 DT_FILTER entries");
    expect(readDynamic(sharedObject({ needed: ["liba.so", "liba.so"] }).bytes).needed).toEqual(["liba.so", "liba.so"]);
  });

  test("a filter library (DT_FILTER or DT_AUXILIARY) is refused, naming the entry", () => {
    refused(() => readDynamic(sharedObject({ strings: ["libf.so"], extra: [[DT.FILTER, 1n]] }).bytes), "it is a filter library (DT_FILTER), which makes the loader load another library by name; cxagent does not load filters");
    refused(() => readDynamic(sharedObject({ strings: ["libf.so"], extra: [[DT.AUXILIARY, 1n]] }).bytes), "it is a filter library (DT_AUXILIARY)");
  });

  test("DF_1_NODEFLIB is read from DT_FLAGS_1, and only that bit", () => {
    expect(readDynamic(sharedObject({ extra: [[DT.FLAGS_1, 0x800n]] }).bytes).noDefaultLib).toBe(true);
    expect(readDynamic(sharedObject({ extra: [[DT.FLAGS_1, 0x801n]] }).bytes).noDefaultLib).toBe(true);
    expect(readDynamic(sharedObject({ extra: [[DT.FLAGS_1, 0x1n | 0x8000000n]] }).bytes).noDefaultLib).toBe(false);
    expect(readDynamic(sharedObject({ extra: [[DT.FLAGS_1, 0n]] }).bytes).noDefaultLib).toBe(false);
    expect(readDynamic(sharedObject().bytes).noDefaultLib).toBe(false);
  });
});

describe("the string table", () => {
  test("needed only where a name is read: no string entry, no string table asked for", () => {
    const none = sharedObject({ omit: [DT.STRTAB, DT.STRSZ], extra: [[DT.FLAGS_1, 0x800n]] });
    expect(readDynamic(none.bytes)).toMatchObject({ needed: [], noDefaultLib: true });
    // DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH: each alone asks for the table
    const each: SharedObject[] = [{ needed: ["a"] }, { soname: "a" }, { rpath: "a" }, { runpath: "a" }];
    for (const o of each) {
      for (const omit of [[DT.STRTAB], [DT.STRSZ], [DT.STRTAB, DT.STRSZ]]) {
        refused(() => readDynamic(sharedObject({ ...o, omit }).bytes), "its dynamic section names libraries but has no string table (DT_STRTAB, DT_STRSZ)");
      }
    }
  });

  test("the table's address must lie in a loadable segment, at its first byte and not past its last", () => {
    const lib = sharedObject({ needed: ["liba.so"], base: 0x40000 });
    expect(readDynamic(lib.bytes).needed).toEqual(["liba.so"]);
    const outside = Buffer.from(lib.bytes);
    outside.writeBigUInt64LE(BigInt(lib.at.strtab), lib.entry(DT.STRTAB) + 8); // the file offset, not the address
    refused(() => readDynamic(outside), "its string table address is in no loadable segment");
    const pastEnd = Buffer.from(lib.bytes);
    pastEnd.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.STRTAB) + 8);
    refused(() => readDynamic(pastEnd), "its string table address is in no loadable segment");
    const far = Buffer.from(lib.bytes);
    far.writeBigUInt64LE(1n << 53n, lib.entry(DT.STRTAB) + 8);
    refused(() => readDynamic(far), "its DT_STRTAB is out of range");
    // the segment's first byte is in it: the table at the file's start holds "\x7fELF..." and a NUL at byte 7
    const first = Buffer.from(lib.bytes);
    first.writeBigUInt64LE(BigInt(lib.base), lib.entry(DT.STRTAB) + 8);
    first.writeBigUInt64LE(8n, lib.entry(DT.STRSZ) + 8);
    first.writeBigUInt64LE(1n, lib.entry(DT.NEEDED) + 8);
    expect(readDynamic(first).needed).toEqual(["ELF\x02\x01\x01"]);
  });

  test("a second loadable segment maps its own addresses to its own offsets", () => {
    // the same layout twice: the first build says where the string table lies
    const placeholder = { type: PT_NOTE, offset: 0, vaddr: 0, filesz: 0 };
    const at = sharedObject({ needed: ["liba.so"], segments: [placeholder] }).at;
    const size = at.symtab - at.strtab;
    const lib = sharedObject({ needed: ["liba.so"], segments: [{ type: PT_LOAD, offset: at.strtab, vaddr: 0x900000, filesz: size }] });
    const bytes = Buffer.from(lib.bytes);
    bytes.writeBigUInt64LE(BigInt(at.strtab), lib.at.phoff + 32); // PT_LOAD 0 ends where the table starts
    bytes.writeBigUInt64LE(0x900000n, lib.entry(DT.STRTAB) + 8);
    expect(readDynamic(bytes).needed).toEqual(["liba.so"]);
    bytes.writeBigUInt64LE(BigInt(0x900000 + size), lib.entry(DT.STRTAB) + 8);
    refused(() => readDynamic(bytes), "its string table address is in no loadable segment");
    bytes.writeBigUInt64LE(BigInt(0x900000 - 1), lib.entry(DT.STRTAB) + 8);
    refused(() => readDynamic(bytes), "its string table address is in no loadable segment");
  });

  test("the table ending exactly at the file's end is read; DT_STRSZ one byte more is refused", () => {
    // a string table placed last: point DT_STRTAB at the dynamic section's last bytes is awkward, so cut the file after a table moved there
    const lib = sharedObject({ needed: ["liba.so"] });
    const table = lib.bytes.subarray(lib.at.strtab, lib.at.strtab + 9); // "\0liba.so\0"
    const bytes = Buffer.concat([lib.bytes, table]);
    bytes.writeBigUInt64LE(BigInt(bytes.length), lib.at.phoff + 32);
    bytes.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.STRTAB) + 8);
    bytes.writeBigUInt64LE(9n, lib.entry(DT.STRSZ) + 8);
    expect(readDynamic(bytes).needed).toEqual(["liba.so"]);
    bytes.writeBigUInt64LE(10n, lib.entry(DT.STRSZ) + 8);
    refused(() => readDynamic(bytes), `the dynamic string table lies past the end of the file (${bytes.length + 1} > ${bytes.length} bytes)`);
    bytes.writeBigUInt64LE(1n << 53n, lib.entry(DT.STRSZ) + 8);
    refused(() => readDynamic(bytes), "its DT_STRSZ is out of range");
  });

  test("a string's offset at the table's size is past its end; its last byte is inside", () => {
    const lib = sharedObject({ needed: ["liba.so"] });
    const size = Number(lib.bytes.readBigUInt64LE(lib.entry(DT.STRSZ) + 8));
    const at = (offset: number) => {
      const b = Buffer.from(lib.bytes);
      b.writeBigUInt64LE(BigInt(offset), lib.entry(DT.NEEDED) + 8);
      return b;
    };
    refused(() => readDynamic(at(size)), "its DT_NEEDED points past the end of the string table");
    refused(() => readDynamic(at(size - 1)), "it needs a library with an empty name (DT_NEEDED)");
    refused(() => readDynamic(at(0)), "it needs a library with an empty name (DT_NEEDED)");
    expect(readDynamic(at(2)).needed).toEqual(["iba.so"]);
    const far = at(0);
    far.writeBigUInt64LE(1n << 53n, lib.entry(DT.NEEDED) + 8);
    refused(() => readDynamic(far), "its DT_NEEDED is out of range");
    const soname = sharedObject({ soname: "libs.so", rpath: "r", runpath: "u" });
    for (const [tag, name] of [[DT.SONAME, "DT_SONAME"], [DT.RPATH, "DT_RPATH"], [DT.RUNPATH, "DT_RUNPATH"]] as const) {
      const b = Buffer.from(soname.bytes);
      b.writeBigUInt64LE(1000n, soname.entry(tag) + 8);
      refused(() => readDynamic(b), `its ${name} points past the end of the string table`);
    }
  });

  test("a string with no NUL inside the table is refused, though a NUL follows the table in the file", () => {
    const lib = sharedObject({ needed: ["liba.so"] });
    const size = Number(lib.bytes.readBigUInt64LE(lib.entry(DT.STRSZ) + 8));
    const b = Buffer.from(lib.bytes);
    b.writeBigUInt64LE(BigInt(size - 1), lib.entry(DT.STRSZ) + 8); // the table now ends before "liba.so"'s NUL
    expect(b[lib.at.strtab + size - 1]).toBe(0);
    refused(() => readDynamic(b), "its DT_NEEDED string is not NUL-terminated inside the string table");
  });

  test("a string longer than the first read (256 bytes) is read whole, however long", () => {
    for (const length of [255, 256, 257, 1024, 1025, 5000]) {
      const rpath = "/" + "r".repeat(length - 1);
      const lib = sharedObject({ rpath, needed: ["liba.so"] });
      expect(readDynamic(lib.bytes)).toMatchObject({ rpath, needed: ["liba.so"] });
    }
    // a long string that is not terminated inside its table
    const lib = sharedObject({ rpath: "/" + "r".repeat(2000) });
    const b = Buffer.from(lib.bytes);
    b.writeBigUInt64LE(BigInt(lib.string("/" + "r".repeat(2000)) + 2001), lib.entry(DT.STRSZ) + 8);
    refused(() => readDynamic(b), "its DT_RPATH string is not NUL-terminated inside the string table");
  });

  test("a string read in growing windows never reads past its table: unterminated at 300, 500 and 1000 bytes, a NUL right after", () => {
    for (const length of [300, 500, 1000]) {
      const rpath = "/" + "r".repeat(length - 1);
      const lib = sharedObject({ rpath });
      const b = Buffer.from(lib.bytes);
      b.writeBigUInt64LE(BigInt(lib.string(rpath) + length), lib.entry(DT.STRSZ) + 8); // the table ends before the NUL
      expect(b[lib.at.strtab + lib.string(rpath) + length]).toBe(0);
      refused(() => readDynamic(b), "its DT_RPATH string is not NUL-terminated inside the string table");
    }
  });

  test("a name that is not UTF-8 is refused", () => {
    const lib = sharedObject({ needed: ["lib\u00e9.so"] });
    expect(readDynamic(lib.bytes).needed).toEqual(["lib\u00e9.so"]);
    const b = Buffer.from(lib.bytes);
    b[lib.at.strtab + lib.string("lib\u00e9.so") + 3] = 0xff;
    refused(() => readDynamic(b), "its DT_NEEDED string is not valid UTF-8");
  });
});

describe("exports", () => {
  const symbols = [
    { name: "global_fn" },
    { name: "weak_fn", bind: 2 },
    { name: "unique_obj", bind: 10, type: 1 },
    { name: "protected_fn", visibility: 3 },
    { name: "local_fn", bind: 0 },
    { name: "import_fn", shndx: 0 },
    { name: "hidden_fn", visibility: 2 },
    { name: "internal_fn", visibility: 1 },
    { name: "section_sym", type: 3 },
    { name: "file_sym", type: 4 },
    { name: "ifunc", type: 10 },
    { name: "bind3", bind: 3 },
    { name: "last_fn" },
  ];
  const exported = ["global_fn", "weak_fn", "unique_obj", "protected_fn", "ifunc", "last_fn"];

  test("defined, global/weak/unique, default/protected, not a section or file symbol: through DT_GNU_HASH", () => {
    expect(readExports(sharedObject({ symbols }).bytes)).toEqual(exported);
  });

  test("a symbol whose name lies past the string table is refused", () => {
    const lib = sharedObject({ symbols: [{ name: "f" }, { name: "g" }] });
    const b = Buffer.from(lib.bytes);
    b.writeUInt32LE(1000, lib.at.symtab + 2 * 24);
    refused(() => readExports(b), "its symbol name points past the end of the string table");
  });

  test("through DT_HASH alone, its nchain the count; DT_GNU_HASH is preferred when both are there", () => {
    expect(readExports(sharedObject({ symbols, hash: { sysv: sysvHash(symbols.length + 1) } }).bytes)).toEqual(exported);
    expect(readExports(sharedObject({ symbols, hash: { sysv: sysvHash(3) } }).bytes)).toEqual(["global_fn", "weak_fn"]);
    expect(readExports(sharedObject({ symbols, hash: { gnu: gnuHashOf(3), sysv: sysvHash(symbols.length + 1) } }).bytes)).toEqual(["global_fn", "weak_fn"]);
    expect(readExports(sharedObject({ symbols, hash: { gnu: gnuHashOf(symbols.length + 1), sysv: sysvHash(2) } }).bytes)).toEqual(exported);
  });

  test("a symbol table with no hash table, symbols of the wrong size, or no string table is refused", () => {
    refused(() => readExports(sharedObject({ symbols, hash: {} }).bytes), "it has a symbol table but no hash table (DT_GNU_HASH or DT_HASH), so the loader could find none of its symbols");
    const lib = sharedObject({ symbols });
    const b = Buffer.from(lib.bytes);
    b.writeBigUInt64LE(16n, lib.entry(DT.SYMENT) + 8);
    refused(() => readExports(b), "its symbols are 16 bytes each (DT_SYMENT), not the 24 of ELF64");
    expect(readExports(sharedObject({ symbols, omit: [DT.SYMENT] }).bytes)).toEqual(exported);
    refused(() => readExports(sharedObject({ symbols, omit: [DT.STRTAB] }).bytes), "it has a dynamic symbol table but has no string table");
    refused(() => readExports(sharedObject({ symbols, extra: [[DT.SYMTAB, 0n]] }).bytes), "its dynamic section has 2 DT_SYMTAB entries");
    refused(() => readExports(sharedObject({ symbols, extra: [[DT.SYMENT, 24n]] }).bytes), "its dynamic section has 2 DT_SYMENT entries");
    refused(() => readExports(sharedObject({ symbols, extra: [[DT.GNU_HASH, 0n]] }).bytes), "its dynamic section has 2 DT_GNU_HASH entries");
    refused(() => readExports(sharedObject({ symbols, hash: { sysv: sysvHash(2) }, extra: [[DT.HASH, 0n]] }).bytes), "its dynamic section has 2 DT_HASH entries");
    expect(readExports(sharedObject({ needed: ["liba.so"] }).bytes)).toEqual([]);
  });

  test("addresses of the tables are in a loadable segment and in range", () => {
    const lib = sharedObject({ symbols, hash: { gnu: gnuHashOf(symbols.length + 1), sysv: sysvHash(symbols.length + 1) } });
    for (const [tag, name] of [[DT.SYMTAB, "DT_SYMTAB"], [DT.GNU_HASH, "DT_GNU_HASH"]] as const) {
      const b = Buffer.from(lib.bytes);
      b.writeBigUInt64LE(1n << 53n, lib.entry(tag) + 8);
      refused(() => readExports(b), `its ${name} is out of range`);
      b.writeBigUInt64LE(16n, lib.entry(tag) + 8);
      refused(() => readExports(b), `${name} address is in no loadable segment`);
    }
    const sysv = sharedObject({ symbols, hash: { sysv: sysvHash(symbols.length + 1) } });
    const b = Buffer.from(sysv.bytes);
    b.writeBigUInt64LE(1n << 53n, sysv.entry(DT.HASH) + 8);
    refused(() => readExports(b), "its DT_HASH is out of range");
    b.writeBigUInt64LE(16n, sysv.entry(DT.HASH) + 8);
    refused(() => readExports(b), "DT_HASH address is in no loadable segment");
  });

  test("a symbol table whose count runs past the file's end is refused, and one ending at it is read", () => {
    // the symbol table moved to the end of the file: its last byte the file's last
    const lib = sharedObject({ symbols, hash: { sysv: sysvHash(symbols.length + 1) } });
    const table = lib.bytes.subarray(lib.at.symtab, lib.at.symtab + (symbols.length + 1) * 24);
    const b = Buffer.concat([lib.bytes, table]);
    b.writeBigUInt64LE(BigInt(b.length), lib.at.phoff + 32);
    b.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.SYMTAB) + 8);
    expect(readExports(b)).toEqual(exported);
    b.writeUInt32LE(symbols.length + 2, lib.at.sysv + 4);
    refused(() => readExports(b), `the dynamic symbol table lies past the end of the file (${b.length + 24} > ${b.length} bytes)`);
  });

  test("a DT_HASH header cut by the file's end is refused; one ending at it is read", () => {
    // a symbol table of one entry (the null one), then DT_HASH's 8-byte header as the file's last bytes
    const sysv = Buffer.alloc(8);
    sysv.writeUInt32LE(1, 0);
    sysv.writeUInt32LE(1, 4);
    const built = sharedObject({ extra: [[DT.SYMTAB, 0n], [DT.HASH, 0n]] });
    const grown = Buffer.concat([built.bytes, Buffer.alloc(24), sysv]);
    grown.writeBigUInt64LE(BigInt(grown.length), built.at.phoff + 32);
    grown.writeBigUInt64LE(BigInt(built.base + built.bytes.length), built.entry(DT.SYMTAB) + 8);
    grown.writeBigUInt64LE(BigInt(built.base + built.bytes.length + 24), built.entry(DT.HASH) + 8);
    expect(readExports(grown)).toEqual([]);
    const cut = grown.subarray(0, grown.length - 1);
    cut.writeBigUInt64LE(BigInt(cut.length), built.at.phoff + 32);
    refused(() => readExports(cut), `the symbol hash table (DT_HASH) lies past the end of the file (${grown.length} > ${cut.length} bytes)`);
  });

  describe("the GNU hash table's count", () => {
    const many = Array.from({ length: 6 }, (_, i) => ({ name: `f${i + 1}` }));
    const withGnu = (gnu: Buffer) => readExports(sharedObject({ symbols: many, hash: { gnu } }).bytes);

    test("past the highest bucket to the end of its chain", () => {
      expect(withGnu(gnuHashOf(7))).toEqual(["f1", "f2", "f3", "f4", "f5", "f6"]);
      // buckets 2 and 4; chains from 2: 2 3 4 5(end): symbols 1..5 counted
      expect(withGnu(gnuHash({ buckets: [2, 0, 4], symoffset: 2, chains: [0, 0, 0, 1, 0] }))).toEqual(["f1", "f2", "f3", "f4", "f5"]);
      // the highest bucket equal to symoffset: its chain is walked (3 symbols past it), not skipped
      expect(withGnu(gnuHash({ buckets: [3], symoffset: 3, chains: [0, 0, 1] }))).toEqual(["f1", "f2", "f3", "f4", "f5"]);
      // a chain of one at the last symbol
      expect(withGnu(gnuHash({ buckets: [6], symoffset: 1, chains: [0, 0, 0, 0, 0, 1] }))).toEqual(["f1", "f2", "f3", "f4", "f5", "f6"]);
      // bloom words of other sizes move the buckets
      expect(withGnu(gnuHash({ buckets: [1], symoffset: 1, bloomWords: 4, chains: [0, 1] }))).toEqual(["f1", "f2"]);
      expect(withGnu(gnuHash({ buckets: [0, 1], symoffset: 1, bloomWords: 2, chains: [0, 0, 1] }))).toEqual(["f1", "f2", "f3"]);
    });

    test("every bucket empty, or below symoffset: symoffset symbols", () => {
      expect(withGnu(gnuHash({ buckets: [0, 0], symoffset: 4, chains: [] }))).toEqual(["f1", "f2", "f3"]);
      expect(withGnu(gnuHash({ buckets: [2], symoffset: 3, chains: [] }))).toEqual(["f1", "f2"]);
      expect(withGnu(gnuHash({ buckets: [], symoffset: 2, chains: [] }))).toEqual(["f1"]);
    });

    test("a header, buckets or chain past the file's end are refused, naming the part", () => {
      const lib = sharedObject({ symbols: many });
      const hashAt = (value: number) => {
        const b = Buffer.from(lib.bytes);
        b.writeBigUInt64LE(BigInt(lib.base + value), lib.entry(DT.GNU_HASH) + 8);
        return b;
      };
      refused(() => readExports(hashAt(lib.bytes.length - 15)), `the GNU symbol hash table (DT_GNU_HASH) lies past the end of the file (${lib.bytes.length + 1} > ${lib.bytes.length} bytes)`);
      const buckets = Buffer.from(lib.bytes);
      buckets.writeUInt32LE(0x10000000, lib.at.hash + 8); // the bloom filter's size moves the buckets far past the end
      refused(() => readExports(buckets), "the GNU hash table's buckets lies past the end of the file");
      const many2 = Buffer.from(lib.bytes);
      many2.writeUInt32LE(0x10000000, lib.at.hash); // more buckets than the file holds
      refused(() => readExports(many2), "the GNU hash table's buckets lies past the end of the file");
      // a chain that never ends: read until the file does
      const endless = gnuAtEnd(many, gnuHash({ buckets: [1], symoffset: 1, chains: [0, 0, 0, 0, 0, 0, 0, 0] }));
      refused(() => readExports(endless), "the GNU hash table's chains lies past the end of the file");
    });

    test("buckets cut by the file's end are refused, however few are missing", () => {
      // 8 buckets declared, 1 present: the file ends 28 bytes short of the rest
      const gnu = gnuHash({ buckets: [1], symoffset: 1, chains: [] });
      gnu.writeUInt32LE(8, 0);
      const b = gnuAtEnd(many, gnu);
      refused(() => readExports(b), `the GNU hash table's buckets lies past the end of the file (${b.length + 28} > ${b.length} bytes)`);
    });

    test("a GNU hash table whose header, buckets and chain end at the file's last byte is read", () => {
      const gnu = gnuHash({ buckets: [1], symoffset: 1, chains: [0, 0, 0, 0, 0, 1] });
      const lib = sharedObject({ symbols: many, hash: { gnu: gnuHashOf(7) } });
      const b = Buffer.concat([lib.bytes, gnu]);
      b.writeBigUInt64LE(BigInt(b.length), lib.at.phoff + 32);
      b.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.GNU_HASH) + 8);
      expect(readExports(b)).toEqual(["f1", "f2", "f3", "f4", "f5", "f6"]);
      // its last chain entry cut off
      const cut = Buffer.from(b.subarray(0, b.length - 4));
      cut.writeBigUInt64LE(BigInt(cut.length), lib.at.phoff + 32);
      refused(() => readExports(cut), `the GNU hash table's chains lies past the end of the file (${b.length} > ${cut.length} bytes)`);
      // a header alone at the end, no bucket
      const head = Buffer.concat([lib.bytes, gnuHash({ buckets: [], symoffset: 7, chains: [] })]);
      head.writeBigUInt64LE(BigInt(head.length), lib.at.phoff + 32);
      head.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.GNU_HASH) + 8);
      expect(readExports(head)).toEqual(["f1", "f2", "f3", "f4", "f5", "f6"]);
    });
  });
});

/** A library of `symbols` whose GNU hash table is `gnu`, placed as the file's last bytes. */
function gnuAtEnd(symbols: { name: string }[], gnu: Buffer): Buffer {
  const lib = sharedObject({ symbols });
  const b = Buffer.concat([lib.bytes, gnu]);
  b.writeBigUInt64LE(BigInt(b.length), lib.at.phoff + 32);
  b.writeBigUInt64LE(BigInt(lib.base + lib.bytes.length), lib.entry(DT.GNU_HASH) + 8);
  return b;
}

describe("sources", () => {
  test("positioned reads of a file give what the bytes give; a read past the end gives the bytes there", () => {
    using dir = tempDir("cxagent-elf-");
    const lib = sharedObject({ needed: ["liba.so"], soname: "libme.so", runpath: "$ORIGIN/" + "x".repeat(600), symbols: [{ name: "f" }, { name: "g" }] });
    const path = join(dir.path, "lib.so");
    writeFileSync(path, lib.bytes);
    const fd = openSync(path, "r");
    try {
      const source = fileSource(fd);
      expect(source.size).toBe(lib.bytes.length);
      expect(readDynamic(source)).toEqual(readDynamic(lib.bytes));
      expect(readExports(source)).toEqual(["f", "g"]);
      expect(Buffer.from(source.read(lib.bytes.length - 3, 10))).toEqual(Buffer.from(lib.bytes.subarray(lib.bytes.length - 3)));
      expect(Buffer.from(source.read(1, 3))).toEqual(Buffer.from("ELF"));
      expect(source.read(lib.bytes.length, 4).length).toBe(0);
    } finally {
      closeSync(fd);
    }
    const memory = bytesSource(lib.bytes);
    expect(memory.size).toBe(lib.bytes.length);
    expect(Buffer.from(memory.read(1, 3))).toEqual(Buffer.from("ELF"));
    expect(readDynamic(memory)).toEqual(readDynamic(lib.bytes));
  });
});
