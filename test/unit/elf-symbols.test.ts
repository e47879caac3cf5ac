/**
 * src/elf/symbols.ts (what `cxagent check` reads to say "defined but hidden") against hand-made
 * ELF files (test/elf-image.ts): each field of a symbol, each bound of the section headers and
 * symbol tables hit exactly. test/unit/check-rules.test.ts reads the compiled fixtures.
 */
import { describe, expect, test } from "bun:test";
import { ElfError } from "../../src/elf/elf.ts";
import { readSymbols } from "../../src/elf/symbols.ts";
import { header, sectioned, SHT_DYNSYM, SHT_SYMTAB, type Sym } from "../elf-image.ts";

const refused = (bytes: Uint8Array, message: string) => {
  expect(() => readSymbols(bytes)).toThrow(ElfError);
  expect(() => readSymbols(bytes)).toThrow(message);
};

const dynamic: Sym[] = [
  { name: "global_fn" },
  { name: "weak_obj", bind: 2, type: 1 },
  { name: "unique", bind: 10, type: 10 },
  { name: "import_fn", shndx: 0 },
  { name: "protected_fn", visibility: 3 },
];
const all: Sym[] = [{ name: "hidden_fn", bind: 0, visibility: 2 }, { name: "internal", bind: 0, visibility: 1, type: 1 }, { name: "big_index", shndx: 0xfff1 }];
const fields = (s: Sym) => ({ name: s.name, type: s.type ?? 2, bind: s.bind ?? 1, visibility: s.visibility ?? 0, defined: (s.shndx ?? 7) !== 0 });

describe("readSymbols", () => {
  test("both tables, each symbol's name, type, binding, visibility and whether it is defined; the null symbol left out", () => {
    const { bytes } = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }, { type: SHT_SYMTAB, symbols: all }]);
    expect(readSymbols(bytes)).toEqual({ dynamic: dynamic.map(fields), all: all.map(fields) });
    // the other order of the sections
    const swapped = sectioned([{ type: SHT_SYMTAB, symbols: all }, { type: SHT_DYNSYM, symbols: dynamic }]);
    expect(readSymbols(swapped.bytes)).toEqual({ dynamic: dynamic.map(fields), all: all.map(fields) });
  });

  test("a stripped file: no .symtab is null; no .dynsym is an empty list", () => {
    expect(readSymbols(sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]).bytes)).toEqual({ dynamic: dynamic.map(fields), all: null });
    expect(readSymbols(sectioned([{ type: SHT_SYMTAB, symbols: all }]).bytes)).toEqual({ dynamic: [], all: all.map(fields) });
    expect(readSymbols(sectioned([]).bytes)).toEqual({ dynamic: [], all: null });
  });

  test("the first table of a type is the one read", () => {
    const { bytes } = sectioned([{ type: SHT_DYNSYM, symbols: [{ name: "first" }] }, { type: SHT_DYNSYM, symbols: [{ name: "second" }] }]);
    expect(readSymbols(bytes).dynamic.map((s) => s.name)).toEqual(["first"]);
  });

  test("not ELF, cut short, 32-bit or big-endian is refused", () => {
    refused(new TextEncoder().encode("not an ELF file at all, just text, and longer than its 64-byte header"), "it is not an ELF file");
    refused(header().subarray(0, 63), "it is not an ELF file");
    expect(readSymbols(header())).toEqual({ dynamic: [], all: null });
    refused(header({ class: 1 }), "it is not a 64-bit little-endian ELF file");
    refused(header({ data: 2 }), "it is not a 64-bit little-endian ELF file");
  });

  test("no section headers, or headers smaller than ELF64's 64 bytes: no symbols, nothing read", () => {
    const { bytes } = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]);
    const noneCounted = Buffer.from(bytes);
    noneCounted.writeUInt16LE(0, 60);
    expect(readSymbols(noneCounted)).toEqual({ dynamic: [], all: null });
    // none counted: where they would start is never looked at
    expect(readSymbols(header({ shoff: 1n << 40n, shnum: 0 }))).toEqual({ dynamic: [], all: null });
    const small = Buffer.from(bytes);
    small.writeUInt16LE(63, 58);
    expect(readSymbols(small)).toEqual({ dynamic: [], all: null });
    // headers laid out at 48 bytes each, every field inside them: still not read
    expect(readSymbols(sectioned([{ type: SHT_DYNSYM, symbols: dynamic }], { shentsize: 48 }).bytes)).toEqual({ dynamic: [], all: null });
    // entries larger than 64 bytes are stepped over by their own size
    const wide = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }, { type: SHT_SYMTAB, symbols: all }], { shentsize: 72 });
    expect(readSymbols(wide.bytes)).toEqual({ dynamic: dynamic.map(fields), all: all.map(fields) });
  });

  test("section headers ending at the file's last byte are read; one byte short is refused", () => {
    const { bytes } = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]);
    expect(readSymbols(bytes).dynamic).toHaveLength(dynamic.length);
    refused(bytes.subarray(0, bytes.length - 1), "its section headers lie past the end of the file");
  });

  test("a symbol table's string table: its index one below the count is read, at the count is refused", () => {
    const built = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]);
    // sections: 0 null, 1 strings, 2 symbols; link 2 (the symbol table itself, read as strings) still exists
    const linkAt = (link: number) => {
      const b = Buffer.from(built.bytes);
      b.writeUInt32LE(link, built.shoff + 2 * 64 + 40);
      return b;
    };
    expect(readSymbols(linkAt(2)).dynamic).toHaveLength(dynamic.length);
    refused(linkAt(3), "a symbol table names a string table that does not exist");
    refused(linkAt(0xffffffff), "a symbol table names a string table that does not exist");
  });

  test("a symbol table or its strings ending at the file's last byte are read; a byte more is refused", () => {
    const built = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]);
    const { sections, shoff } = built;
    const sized = (section: number, offset: number, size: number) => {
      const b = Buffer.from(built.bytes);
      b.writeBigUInt64LE(BigInt(offset), shoff + section * 64 + 24);
      b.writeBigUInt64LE(BigInt(size), shoff + section * 64 + 32);
      return b;
    };
    // the symbol table read over the section headers to the end: exactly to the end, 24-byte entries
    const toEnd = built.bytes.length - sections[2]!.offset;
    expect(readSymbols(sized(2, sections[2]!.offset, toEnd)).dynamic.length).toBeGreaterThan(dynamic.length);
    refused(sized(2, sections[2]!.offset, toEnd + 1), "a symbol table lies past the end of the file");
    // the strings to the file's end, then one byte more
    const stringsToEnd = built.bytes.length - sections[1]!.offset;
    expect(readSymbols(sized(1, sections[1]!.offset, stringsToEnd)).dynamic).toEqual(dynamic.map(fields));
    refused(sized(1, sections[1]!.offset, stringsToEnd + 1), "a symbol table lies past the end of the file");
  });

  test("a size that is not a whole number of symbols: the whole ones are read", () => {
    const built = sectioned([{ type: SHT_DYNSYM, symbols: dynamic }]);
    const b = Buffer.from(built.bytes);
    b.writeBigUInt64LE(BigInt(built.sections[2]!.size - 1), built.shoff + 2 * 64 + 32);
    expect(readSymbols(b).dynamic).toEqual(dynamic.slice(0, -1).map(fields));
  });

  test("a name offset at the string table's size is skipped; its last byte is read; a name unterminated at the table's end stops there", () => {
    const built = sectioned([{ type: SHT_DYNSYM, symbols: [{ name: "aa" }, { name: "bb" }] }]);
    const { sections } = built;
    const strings = sections[1]!;
    const symbolsAt = sections[2]!.offset;
    const named = (second: number) => {
      const b = Buffer.from(built.bytes);
      b.writeUInt32LE(second, symbolsAt + 2 * 24);
      return b;
    };
    expect(readSymbols(named(strings.size)).dynamic.map((s) => s.name)).toEqual(["aa"]);
    expect(readSymbols(named(strings.size - 1)).dynamic.map((s) => s.name)).toEqual(["aa", ""]);
    expect(readSymbols(named(4)).dynamic.map((s) => s.name)).toEqual(["aa", "bb"]);
    expect(readSymbols(named(5)).dynamic.map((s) => s.name)).toEqual(["aa", "b"]);
    // the table one byte shorter: "bb"'s NUL is outside it, and what follows (the symbol table) is not read as its name
    const short = Buffer.from(built.bytes);
    short.writeBigUInt64LE(BigInt(strings.size - 1), built.shoff + 64 + 32);
    short[strings.offset + strings.size - 1] = 0x43; // no NUL where the table ended
    expect(readSymbols(short).dynamic.map((s) => s.name)).toEqual(["aa", "bb"]);
  });

  test("a symbol table that claims more than a million symbols is refused; a million are read", () => {
    const million = 1_000_000 * 24;
    const build = (size: number) => {
      const built = sectioned([{ type: SHT_DYNSYM, symbols: [] }]);
      // the symbol table grown in place to `size` bytes of zeros, the section headers after it
      const table = built.sections[2]!;
      const before = built.bytes.subarray(0, table.offset);
      const headers = Buffer.from(built.bytes.subarray(built.shoff));
      headers.writeBigUInt64LE(BigInt(size), 2 * 64 + 32);
      const b = Buffer.concat([before, Buffer.alloc(size), headers]);
      b.writeBigUInt64LE(BigInt(table.offset + size), 40);
      return b;
    };
    expect(readSymbols(build(million)).dynamic).toHaveLength(999_999);
    refused(build(million + 24), "a symbol table claims 1000001 symbols");
  });
});
