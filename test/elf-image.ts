/**
 * Hand-made ELF64 little-endian files for the readers' tests (test/unit/elf-bounds.test.ts,
 * test/unit/elf-symbols.test.ts): every field where the test puts it, so that a bound can be hit
 * exactly (a table ending at the file's last byte, a count one past it, an entry twice). The
 * compiled fixtures are real libraries, but the linker decides their layout; these do not load,
 * they are read.
 */

export const PT_LOAD = 1;
export const PT_DYNAMIC = 2;
export const PT_NOTE = 4;
export const DT = {
  NULL: 0n, NEEDED: 1n, HASH: 4n, STRTAB: 5n, SYMTAB: 6n, STRSZ: 10n, SYMENT: 11n, SONAME: 14n, RPATH: 15n, RUNPATH: 29n,
  FLAGS_1: 0x6ffffffbn, GNU_HASH: 0x6ffffef5n, AUXILIARY: 0x7ffffffdn, FILTER: 0x7fffffffn,
} as const;

/** The 64-byte ELF header, with each field overridable. */
export function header(fields: { class?: number; data?: number; type?: number; machine?: number; phoff?: bigint; phentsize?: number; phnum?: number; shoff?: bigint; shentsize?: number; shnum?: number } = {}): Buffer {
  const b = Buffer.alloc(64);
  b.set([0x7f, 0x45, 0x4c, 0x46, fields.class ?? 2, fields.data ?? 1, 1]);
  b.writeUInt16LE(fields.type ?? 3, 16);
  b.writeUInt16LE(fields.machine ?? 62, 18);
  b.writeUInt32LE(1, 20);
  b.writeBigUInt64LE(fields.phoff ?? 64n, 32);
  b.writeBigUInt64LE(fields.shoff ?? 0n, 40);
  b.writeUInt16LE(64, 52);
  b.writeUInt16LE(fields.phentsize ?? 56, 54);
  b.writeUInt16LE(fields.phnum ?? 0, 56);
  b.writeUInt16LE(fields.shentsize ?? 64, 58);
  b.writeUInt16LE(fields.shnum ?? 0, 60);
  return b;
}

export interface Segment {
  type: number;
  offset: number;
  vaddr: number;
  filesz: number;
}

/** A program header of `size` bytes (56 is ELF64's; more leaves the rest zero). */
export function programHeader(s: Segment, size = 56): Buffer {
  const b = Buffer.alloc(size);
  b.writeUInt32LE(s.type, 0);
  b.writeBigUInt64LE(BigInt(s.offset), 8);
  b.writeBigUInt64LE(BigInt(s.vaddr), 16);
  b.writeBigUInt64LE(BigInt(s.vaddr), 24);
  b.writeBigUInt64LE(BigInt(s.filesz), 32);
  b.writeBigUInt64LE(BigInt(s.filesz), 40);
  return b;
}

export interface Sym {
  name: string;
  /** STB_*: 0 local, 1 global, 2 weak, 10 unique. */
  bind?: number;
  /** STT_*: 1 object, 2 function, 3 section, 4 file. */
  type?: number;
  /** STV_*: 0 default, 1 internal, 2 hidden, 3 protected. */
  visibility?: number;
  /** The section index; 0 is undefined (an import). */
  shndx?: number;
}

/** A string table ("\0" first) and where each string starts in it. */
export function stringTable(strings: readonly string[]): { bytes: Buffer; at: (s: string) => number } {
  const offsets = new Map<string, number>();
  const parts: Buffer[] = [Buffer.from([0])];
  let length = 1;
  for (const s of strings) {
    if (offsets.has(s)) continue;
    offsets.set(s, length);
    const bytes = Buffer.concat([Buffer.from(s), Buffer.from([0])]);
    parts.push(bytes);
    length += bytes.length;
  }
  return { bytes: Buffer.concat(parts), at: (s) => offsets.get(s) ?? 0 };
}

/** A symbol table: the null symbol, then one 24-byte entry per symbol, its name from `names`. */
export function symbolTable(symbols: readonly Sym[], nameAt: (s: string) => number): Buffer {
  const b = Buffer.alloc((symbols.length + 1) * 24);
  symbols.forEach((s, i) => {
    const at = (i + 1) * 24;
    b.writeUInt32LE(nameAt(s.name), at);
    b[at + 4] = ((s.bind ?? 1) << 4) | (s.type ?? 2);
    b[at + 5] = s.visibility ?? 0;
    b.writeUInt16LE(s.shndx ?? 7, at + 6);
  });
  return b;
}

/** A GNU hash table: only its shape counts to the reader (buckets, symoffset, bloom size, chains). */
export function gnuHash(t: { buckets: number[]; symoffset: number; bloomWords?: number; chains: number[] }): Buffer {
  const bloom = t.bloomWords ?? 1;
  const b = Buffer.alloc(16 + bloom * 8 + t.buckets.length * 4 + t.chains.length * 4);
  b.writeUInt32LE(t.buckets.length, 0);
  b.writeUInt32LE(t.symoffset, 4);
  b.writeUInt32LE(bloom, 8);
  b.writeUInt32LE(6, 12);
  // the bloom words are all ones: a real table's would say "maybe" for the names hashed into it
  b.fill(0xff, 16, 16 + bloom * 8);
  t.buckets.forEach((v, i) => b.writeUInt32LE(v, 16 + bloom * 8 + i * 4));
  t.chains.forEach((v, i) => b.writeUInt32LE(v, 16 + bloom * 8 + t.buckets.length * 4 + i * 4));
  return b;
}

/** The GNU hash table of `count` symbols (the null one included): one bucket, from symbol 1 to the last. */
export function gnuHashOf(count: number): Buffer {
  if (count <= 1) return gnuHash({ buckets: [0], symoffset: 1, chains: [] });
  const chains = Array.from({ length: count - 1 }, (_, i) => (i === count - 2 ? 1 : 0));
  return gnuHash({ buckets: [1], symoffset: 1, chains });
}

/** A System V hash table of `nchain` symbols: one empty bucket. */
export function sysvHash(nchain: number): Buffer {
  const b = Buffer.alloc(8 + 4 + nchain * 4);
  b.writeUInt32LE(1, 0);
  b.writeUInt32LE(nchain, 4);
  return b;
}

export interface SharedObject {
  needed?: string[];
  soname?: string;
  rpath?: string;
  runpath?: string;
  /** More strings for the string table (for `extra` entries to point at). */
  strings?: string[];
  symbols?: Sym[];
  /** Which hash table(s) DT_GNU_HASH and DT_HASH point at; by default GNU's when there are symbols. */
  hash?: { gnu?: Buffer; sysv?: Buffer };
  /** Entries after the usual ones, before DT_NULL. */
  extra?: [bigint, bigint][];
  /** Usual entries to leave out (DT_STRTAB, DT_STRSZ, DT_SYMENT, ...). */
  omit?: bigint[];
  /** No DT_NULL at the end of the dynamic section. */
  unterminated?: boolean;
  /** Added to every file offset to make its virtual address (the one PT_LOAD maps the whole file). */
  base?: number;
  type?: number;
  machine?: number;
  /** Program headers beside the PT_LOAD and PT_DYNAMIC. */
  segments?: Segment[];
}

export interface Built {
  bytes: Buffer;
  /** File offsets of the parts, for a test to spoil. */
  at: { strtab: number; symtab: number; hash: number; sysv: number; dynamic: number; phoff: number };
  /** File offset of each dynamic entry, by tag (the first of each). */
  entry: (tag: bigint) => number;
  /** Where a string starts in the string table. */
  string: (s: string) => number;
  base: number;
}

const align = (n: number) => (n + 7) & ~7;

/**
 * A shared object laid out as: header, program headers (PT_LOAD over the whole file, then
 * PT_DYNAMIC, then `segments`), string table, symbol table, hash table(s), dynamic section — the
 * dynamic section ends the file.
 */
export function sharedObject(o: SharedObject = {}): Built {
  const base = o.base ?? 0x1000;
  const symbols = o.symbols ?? [];
  const names = [...(o.needed ?? []), ...(o.soname === undefined ? [] : [o.soname]), ...(o.rpath === undefined ? [] : [o.rpath]), ...(o.runpath === undefined ? [] : [o.runpath]), ...(o.strings ?? []), ...symbols.map((s) => s.name)];
  const strtab = stringTable(names);
  const symtab = symbols.length > 0 ? symbolTable(symbols, strtab.at) : null;
  const hash = o.hash ?? (symtab ? { gnu: gnuHashOf(symbols.length + 1) } : {});
  const phnum = 2 + (o.segments?.length ?? 0);
  const phoff = 64;
  const strtabAt = align(phoff + phnum * 56);
  const symtabAt = align(strtabAt + strtab.bytes.length);
  const hashAt = align(symtabAt + (symtab?.length ?? 0));
  const sysvAt = align(hashAt + (hash.gnu?.length ?? 0));
  const dynamicAt = align(sysvAt + (hash.sysv?.length ?? 0));
  const omit = new Set(o.omit ?? []);
  const entries: [bigint, bigint][] = [];
  const add = (tag: bigint, value: number | bigint) => {
    if (!omit.has(tag)) entries.push([tag, BigInt(value)]);
  };
  for (const n of o.needed ?? []) add(DT.NEEDED, strtab.at(n));
  if (o.soname !== undefined) add(DT.SONAME, strtab.at(o.soname));
  if (o.rpath !== undefined) add(DT.RPATH, strtab.at(o.rpath));
  if (o.runpath !== undefined) add(DT.RUNPATH, strtab.at(o.runpath));
  add(DT.STRTAB, base + strtabAt);
  add(DT.STRSZ, strtab.bytes.length);
  if (symtab) {
    add(DT.SYMTAB, base + symtabAt);
    add(DT.SYMENT, 24);
  }
  if (hash.gnu) add(DT.GNU_HASH, base + hashAt);
  if (hash.sysv) add(DT.HASH, base + sysvAt);
  entries.push(...(o.extra ?? []));
  if (!o.unterminated) entries.push([DT.NULL, 0n]);
  const dynamic = Buffer.alloc(entries.length * 16);
  entries.forEach(([tag, value], i) => {
    dynamic.writeBigInt64LE(tag, i * 16);
    dynamic.writeBigUInt64LE(value, i * 16 + 8);
  });
  const size = dynamicAt + dynamic.length;
  const bytes = Buffer.alloc(size);
  header({ type: o.type, machine: o.machine, phnum }).copy(bytes, 0);
  const segments: Segment[] = [{ type: PT_LOAD, offset: 0, vaddr: base, filesz: size }, { type: PT_DYNAMIC, offset: dynamicAt, vaddr: base + dynamicAt, filesz: dynamic.length }, ...(o.segments ?? [])];
  segments.forEach((s, i) => programHeader(s).copy(bytes, phoff + i * 56));
  strtab.bytes.copy(bytes, strtabAt);
  symtab?.copy(bytes, symtabAt);
  hash.gnu?.copy(bytes, hashAt);
  hash.sysv?.copy(bytes, sysvAt);
  dynamic.copy(bytes, dynamicAt);
  return {
    bytes,
    at: { strtab: strtabAt, symtab: symtabAt, hash: hashAt, sysv: sysvAt, dynamic: dynamicAt, phoff },
    entry: (tag) => {
      const i = entries.findIndex(([t]) => t === tag);
      if (i < 0) throw new Error(`no dynamic entry ${tag}`);
      return dynamicAt + i * 16;
    },
    string: strtab.at,
    base,
  };
}

export interface Section {
  type: number;
  offset: number;
  size: number;
  link?: number;
}

/** A section header of `size` bytes (64 is ELF64's). */
export function sectionHeader(s: Section, size = 64): Buffer {
  const b = Buffer.alloc(size);
  b.writeUInt32LE(s.type, 4);
  b.writeBigUInt64LE(BigInt(s.offset), 24);
  b.writeBigUInt64LE(BigInt(s.size), 32);
  b.writeUInt32LE(s.link ?? 0, 40);
  return b;
}

export const SHT_STRTAB = 3;
export const SHT_SYMTAB = 2;
export const SHT_DYNSYM = 11;

/**
 * An object with section headers only (what `readSymbols` reads): for each table, a string table
 * and a symbol table linked to it, laid out in order, then the section headers, which end the file.
 */
export function sectioned(tables: { type: number; symbols: Sym[] }[], o: { shentsize?: number } = {}): { bytes: Buffer; shoff: number; sections: Section[]; strings: ((s: string) => number)[] } {
  const blobs: Buffer[] = [];
  const sections: Section[] = [{ type: 0, offset: 0, size: 0 }];
  const strings: ((s: string) => number)[] = [];
  let at = 64;
  for (const t of tables) {
    const strtab = stringTable(t.symbols.map((s) => s.name));
    const symtab = symbolTable(t.symbols, strtab.at);
    strings.push(strtab.at);
    sections.push({ type: SHT_STRTAB, offset: at, size: strtab.bytes.length });
    blobs.push(strtab.bytes);
    at += strtab.bytes.length;
    sections.push({ type: t.type, offset: at, size: symtab.length, link: sections.length - 1 });
    blobs.push(symtab);
    at += symtab.length;
  }
  const shentsize = o.shentsize ?? 64;
  const head = header({ shoff: BigInt(at), shnum: sections.length, shentsize, phoff: 0n });
  const bytes = Buffer.concat([head, ...blobs, ...sections.map((s) => sectionHeader(s, shentsize))]);
  return { bytes, shoff: at, sections, strings };
}
