/**
 * A small, strict reader of the one part of an ELF64 file the loader acts on before any code runs:
 * its dynamic section — the libraries it needs (DT_NEEDED), its own soname, and where it asks the
 * loader to look (DT_RPATH, DT_RUNPATH). Anything malformed is refused, never guessed around: the
 * answer decides which bytes the plugin host maps (SPEC §6.3).
 */
import { fstatSync, readSync } from "node:fs";

export interface DynamicInfo {
  /** Names from DT_NEEDED, in file order. */
  needed: string[];
  soname: string | null;
  rpath: string | null;
  runpath: string | null;
  /** DF_1_NODEFLIB: the loader skips its cache and default folders for this object's needs. */
  noDefaultLib: boolean;
  /** e_machine, to pick the loader's cache entries for this architecture. */
  machine: number;
}

export class ElfError extends Error {}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const DT_NULL = 0n;
const DT_NEEDED = 1n;
const DT_HASH = 4n;
const DT_STRTAB = 5n;
const DT_SYMTAB = 6n;
const DT_STRSZ = 10n;
const DT_SYMENT = 11n;
const DT_SONAME = 14n;
const DT_RPATH = 15n;
const DT_RUNPATH = 29n;
const DT_FLAGS_1 = 0x6ffffffbn;
const DT_GNU_HASH = 0x6ffffef5n;
const DT_AUXILIARY = 0x7ffffffdn;
const DT_FILTER = 0x7fffffffn;
const DF_1_NODEFLIB = 0x800n;
const ET_EXEC = 2;
const ET_DYN = 3;
const SYM_SIZE = 24;
const SHN_UNDEF = 0;
/** STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE: what dlsym can return. */
const EXPORTED_BINDINGS = new Set([1, 2, 10]);
const STT_SECTION = 3;
const STT_FILE = 4;
const STV_DEFAULT = 0;
const STV_PROTECTED = 3;

/** True when the bytes start like an ELF file (whatever its class), so they are worth parsing. */
export function looksLikeElf(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x7f && bytes[1] === 0x45 && bytes[2] === 0x4c && bytes[3] === 0x46;
}

/** Where the bytes come from: a whole file in memory, or positioned reads of a file on disk. */
export interface ElfSource {
  size: number;
  /** `length` bytes at `offset`; the caller has checked that they lie inside the file. */
  read(offset: number, length: number): Uint8Array;
}

export function bytesSource(bytes: Uint8Array): ElfSource {
  return { size: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length) };
}

/** Positioned reads of an open file: a few small reads instead of the whole file. */
export function fileSource(fd: number): ElfSource {
  return {
    size: fstatSync(fd).size,
    read(offset, length) {
      const buffer = Buffer.alloc(length);
      let done = 0;
      while (done < length) {
        const n = readSync(fd, buffer, done, length - done, offset + done);
        if (n <= 0) break;
        done += n;
      }
      return buffer.subarray(0, done);
    },
  };
}

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/**
 * Reads the dynamic section of a 64-bit little-endian ELF shared object (or, with
 * `executable`, a program); throws ElfError for anything else or anything malformed.
 */
export function readDynamic(input: Uint8Array | ElfSource, options: { executable?: boolean } = {}): DynamicInfo {
  const dynamic = openDynamic(input instanceof Uint8Array ? bytesSource(input) : input, options);
  const { info, entries, one } = dynamic;
  const stringTags = entries.filter(([t]) => t === DT_NEEDED || t === DT_SONAME || t === DT_RPATH || t === DT_RUNPATH);
  if (stringTags.length === 0) return info;
  const string = dynamic.strings("its dynamic section names libraries");
  for (const [tag, value] of entries) {
    if (tag === DT_NEEDED) {
      const name = string(value, "DT_NEEDED");
      if (name === "") throw new ElfError("it needs a library with an empty name (DT_NEEDED)");
      info.needed.push(name);
    }
  }
  const soname = one(DT_SONAME, "DT_SONAME");
  const rpath = one(DT_RPATH, "DT_RPATH");
  const runpath = one(DT_RUNPATH, "DT_RUNPATH");
  if (soname !== null) info.soname = string(soname, "DT_SONAME");
  if (rpath !== null) info.rpath = string(rpath, "DT_RPATH");
  if (runpath !== null) info.runpath = string(runpath, "DT_RUNPATH");
  return info;
}

/**
 * The names a shared object exports — what `dlsym` can find in it — read from its dynamic symbol
 * table the way the loader finds it: DT_SYMTAB and DT_STRTAB, sized by DT_GNU_HASH or DT_HASH.
 * A symbol counts when it is defined (not undefined, not absolute-zero), global, weak or unique,
 * and of default or protected visibility. Used to tell which ABI a library speaks before any of
 * its code runs (discovery/kind.ts); never to resolve anything.
 */
export function readExports(input: Uint8Array | ElfSource): string[] {
  const source = input instanceof Uint8Array ? bytesSource(input) : input;
  const { one, loads, within, strings } = openDynamic(source, {});
  const symtab = one(DT_SYMTAB, "DT_SYMTAB");
  if (symtab === null) return [];
  const syment = one(DT_SYMENT, "DT_SYMENT");
  if (syment !== null && syment !== BigInt(SYM_SIZE)) throw new ElfError(`its symbols are ${syment} bytes each (DT_SYMENT), not the ${SYM_SIZE} of ELF64`);
  const gnuHash = one(DT_GNU_HASH, "DT_GNU_HASH");
  const sysvHash = one(DT_HASH, "DT_HASH");
  const at = (address: bigint, what: string) => fileOffset(loads, safe(address, what), what);
  let count: number;
  if (gnuHash !== null) count = gnuSymbolCount(source, at(gnuHash, "DT_GNU_HASH"), within);
  else if (sysvHash !== null) {
    const table = at(sysvHash, "DT_HASH");
    within(table, 8, "the symbol hash table (DT_HASH)");
    count = view(source.read(table, 8)).getUint32(4, true);
  } else throw new ElfError("it has a symbol table but no hash table (DT_GNU_HASH or DT_HASH), so the loader could find none of its symbols");
  const table = at(symtab, "DT_SYMTAB");
  within(table, count * SYM_SIZE, "the dynamic symbol table");
  const symbols = view(source.read(table, count * SYM_SIZE));
  const string = strings("it has a dynamic symbol table");
  const names: string[] = [];
  for (let i = 1; i < count; i++) {
    const base = i * SYM_SIZE;
    const info = symbols.getUint8(base + 4);
    const visibility = symbols.getUint8(base + 5) & 3;
    const section = symbols.getUint16(base + 6, true);
    const binding = info >> 4;
    const type = info & 0xf;
    if (section === SHN_UNDEF || !EXPORTED_BINDINGS.has(binding) || (visibility !== STV_DEFAULT && visibility !== STV_PROTECTED)) continue;
    if (type === STT_SECTION || type === STT_FILE) continue;
    names.push(string(BigInt(symbols.getUint32(base, true)), "symbol name"));
  }
  return names;
}

/** How many symbols a GNU hash table covers: past the highest bucket, to the end of its chain. */
function gnuSymbolCount(source: ElfSource, table: number, within: (offset: number, length: number, what: string) => void): number {
  within(table, 16, "the GNU symbol hash table (DT_GNU_HASH)");
  const head = view(source.read(table, 16));
  const buckets = head.getUint32(0, true);
  const symoffset = head.getUint32(4, true);
  const bloomWords = head.getUint32(8, true);
  const bucketsAt = table + 16 + bloomWords * 8;
  within(bucketsAt, buckets * 4, "the GNU hash table's buckets");
  const bucketView = view(source.read(bucketsAt, buckets * 4));
  let last = 0;
  for (let i = 0; i < buckets; i++) last = Math.max(last, bucketView.getUint32(i * 4, true));
  if (last < symoffset) return symoffset;
  const chainsAt = bucketsAt + buckets * 4;
  for (let index = last; ; index++) {
    const at = chainsAt + (index - symoffset) * 4;
    within(at, 4, "the GNU hash table's chains");
    if ((view(source.read(at, 4)).getUint32(0, true) & 1) !== 0) return index + 1;
  }
}

interface OpenDynamic {
  info: DynamicInfo;
  entries: [bigint, bigint][];
  loads: Load[];
  one(tag: bigint, name: string): bigint | null;
  within(offset: number, length: number, what: string): void;
  /** A reader of strings from DT_STRTAB; `needs` says what needs the table, for the refusal when there is none. */
  strings(needs: string): (offset: bigint, what: string) => string;
}

interface Load {
  vaddr: number;
  offset: number;
  filesz: number;
}

/** Checks the ELF header and reads the program headers and the dynamic section's entries. */
function openDynamic(source: ElfSource, options: { executable?: boolean }): OpenDynamic {
  const within = (offset: number, length: number, what: string) => {
    if (offset + length > source.size) throw new ElfError(`${what} lies past the end of the file (${offset + length} > ${source.size} bytes)`);
  };
  const head = source.read(0, Math.min(64, source.size));
  if (!looksLikeElf(head)) throw new ElfError("it does not start with the ELF magic bytes, so it is not a shared library");
  if (head.length < 64) throw new ElfError("its ELF header is cut short");
  const header = view(head);
  if (head[4] !== 2) throw new ElfError(`it is a ${head[4] === 1 ? "32-bit" : "unknown-class"} ELF file; cxagent loads 64-bit libraries only`);
  if (head[5] !== 1) throw new ElfError("it is a big-endian ELF file; cxagent loads little-endian libraries only");
  const type = header.getUint16(16, true);
  if (type !== ET_DYN && !(options.executable && type === ET_EXEC)) throw new ElfError(`it is an ELF file of type ${type}, not a shared object (type ${ET_DYN}); link it with -shared`);
  const machine = header.getUint16(18, true);
  const phoff = u64(header, 32, "e_phoff");
  const phentsize = header.getUint16(54, true);
  const phnum = header.getUint16(56, true);
  if (phnum === 0xffff) throw new ElfError("it has more program headers than cxagent reads (e_phnum = PN_XNUM)");
  if (phnum > 0 && phentsize < 56) throw new ElfError(`its program headers are ${phentsize} bytes each, less than the 56 an ELF64 header needs`);
  within(phoff, phentsize * phnum, "the program header table");
  const table = view(source.read(phoff, phentsize * phnum));

  const loads: Load[] = [];
  let dynamic: { offset: number; size: number } | null = null;
  for (let i = 0; i < phnum; i++) {
    const at = i * phentsize;
    const ptype = table.getUint32(at, true);
    const offset = u64(table, at + 8, "p_offset");
    const vaddr = u64(table, at + 16, "p_vaddr");
    const filesz = u64(table, at + 32, "p_filesz");
    if (ptype === PT_LOAD) {
      within(offset, filesz, `loadable segment ${i}`);
      loads.push({ vaddr, offset, filesz });
    } else if (ptype === PT_DYNAMIC) {
      if (dynamic) throw new ElfError("it has two dynamic segments");
      within(offset, filesz, "the dynamic segment");
      dynamic = { offset, size: filesz };
    }
  }
  const info: DynamicInfo = { needed: [], soname: null, rpath: null, runpath: null, noDefaultLib: false, machine };
  const entries: [bigint, bigint][] = [];
  const one = (tag: bigint, name: string): bigint | null => {
    const found = entries.filter(([t]) => t === tag);
    if (found.length > 1) throw new ElfError(`its dynamic section has ${found.length} ${name} entries`);
    return found[0]?.[1] ?? null;
  };
  const strings = (needs: string) => {
    const strtabAddress = one(DT_STRTAB, "DT_STRTAB");
    const strsz = one(DT_STRSZ, "DT_STRSZ");
    if (strtabAddress === null || strsz === null) throw new ElfError(`${needs} but has no string table (DT_STRTAB, DT_STRSZ)`);
    const strtab = fileOffset(loads, safe(strtabAddress, "DT_STRTAB"), "its string table");
    const size = safe(strsz, "DT_STRSZ");
    within(strtab, size, "the dynamic string table");
    // Read string by string: an executable's table also names every symbol it exports.
    return (offset: bigint, what: string): string => {
      const start = safe(offset, what);
      if (start >= size) throw new ElfError(`its ${what} points past the end of the string table`);
      let window = Math.min(256, size - start);
      let raw = source.read(strtab + start, window);
      while (raw.indexOf(0) < 0 && window < size - start) {
        window = Math.min(window * 4, size - start);
        raw = source.read(strtab + start, window);
      }
      const end = raw.indexOf(0);
      if (end < 0) throw new ElfError(`its ${what} string is not NUL-terminated inside the string table`);
      raw = raw.subarray(0, end);
      try {
        return new TextDecoder("utf-8", { fatal: true }).decode(raw);
      } catch {
        throw new ElfError(`its ${what} string is not valid UTF-8`);
      }
    };
  };
  const opened = { info, entries, loads, one, within, strings };
  if (!dynamic) return opened; // nothing for the loader to resolve

  let terminated = false;
  const section = view(source.read(dynamic.offset, dynamic.size));
  for (let at = 0; at + 16 <= dynamic.size; at += 16) {
    const tag = section.getBigInt64(at, true);
    const value = section.getBigUint64(at + 8, true);
    if (tag === DT_NULL) {
      terminated = true;
      break;
    }
    entries.push([tag, value]);
  }
  if (!terminated) throw new ElfError("its dynamic section does not end with DT_NULL");
  for (const [tag, name] of [[DT_FILTER, "DT_FILTER"], [DT_AUXILIARY, "DT_AUXILIARY"]] as const) {
    if (one(tag, name) !== null) throw new ElfError(`it is a filter library (${name}), which makes the loader load another library by name; cxagent does not load filters`);
  }
  const flags1 = one(DT_FLAGS_1, "DT_FLAGS_1");
  info.noDefaultLib = flags1 !== null && (flags1 & DF_1_NODEFLIB) !== 0n;
  return opened;
}

function u64(view: DataView, at: number, what: string): number {
  return safe(view.getBigUint64(at, true), what);
}

function safe(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ElfError(`its ${what} is out of range`);
  return Number(value);
}

/** The file offset of a virtual address, through the loadable segment that holds it. */
function fileOffset(loads: readonly Load[], address: number, what: string): number {
  const segment = loads.find((l) => address >= l.vaddr && address < l.vaddr + l.filesz);
  if (!segment) throw new ElfError(`${what} address is in no loadable segment`);
  return address - segment.vaddr + segment.offset;
}
