/**
 * The symbols of an ELF64 shared object, read from its section headers without loading it: what
 * it exports (.dynsym, what dlsym can find) and, when the file is not stripped, what it defines
 * but keeps to itself (.symtab) — so `cxagent check` can say "defined but hidden" where a load
 * can only say "missing".
 */
import { ElfError, looksLikeElf } from "./elf.ts";

export interface ElfSymbol {
  name: string;
  /** STT_*: 0 none, 1 object, 2 function, 10 GNU indirect function, ... */
  type: number;
  /** STB_*: 0 local, 1 global, 2 weak. */
  bind: number;
  /** STV_*: 0 default, 1 internal, 2 hidden, 3 protected. */
  visibility: number;
  /** Defined in this file (not an import). */
  defined: boolean;
}

export interface ElfSymbols {
  /** .dynsym: what the dynamic loader sees. */
  dynamic: ElfSymbol[];
  /** .symtab, or null when the file is stripped. */
  all: ElfSymbol[] | null;
}

const SHT_SYMTAB = 2;
const SHT_DYNSYM = 11;
const SYMBOL_SIZE = 24;
/** More symbols than any plugin has; a count past it is a malformed table. */
const MAX_SYMBOLS = 1_000_000;

export const STT_FUNC = 2;
export const STT_GNU_IFUNC = 10;
export const STB_LOCAL = 0;
export const STV_DEFAULT = 0;
export const STV_PROTECTED = 3;

/** Reads both symbol tables; throws ElfError when the file is not an ELF64 little-endian object. */
export function readSymbols(bytes: Uint8Array): ElfSymbols {
  if (!looksLikeElf(bytes) || bytes.length < 64) throw new ElfError("it is not an ELF file");
  if (bytes[4] !== 2 || bytes[5] !== 1) throw new ElfError("it is not a 64-bit little-endian ELF file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const shoff = Number(view.getBigUint64(40, true));
  const shentsize = view.getUint16(58, true);
  const shnum = view.getUint16(60, true);
  if (shnum === 0 || shentsize < 64) return { dynamic: [], all: null };
  if (shoff + shnum * shentsize > bytes.length) throw new ElfError("its section headers lie past the end of the file");
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      type: view.getUint32(at + 4, true),
      offset: Number(view.getBigUint64(at + 24, true)),
      size: Number(view.getBigUint64(at + 32, true)),
      link: view.getUint32(at + 40, true),
    };
  };
  const table = (type: number): ElfSymbol[] | null => {
    for (let i = 0; i < shnum; i++) {
      const s = section(i);
      if (s.type !== type) continue;
      if (s.link >= shnum) throw new ElfError("a symbol table names a string table that does not exist");
      const strings = section(s.link);
      if (s.offset + s.size > bytes.length || strings.offset + strings.size > bytes.length) throw new ElfError("a symbol table lies past the end of the file");
      const count = Math.floor(s.size / SYMBOL_SIZE);
      if (count > MAX_SYMBOLS) throw new ElfError(`a symbol table claims ${count} symbols`);
      const out: ElfSymbol[] = [];
      for (let k = 1; k < count; k++) {
        const at = s.offset + k * SYMBOL_SIZE;
        const nameAt = view.getUint32(at, true);
        const info = bytes[at + 4]!;
        const other = bytes[at + 5]!;
        const shndx = view.getUint16(at + 6, true);
        if (nameAt >= strings.size) continue;
        const start = strings.offset + nameAt;
        let end = start;
        while (end < strings.offset + strings.size && bytes[end] !== 0) end++;
        const name = new TextDecoder().decode(bytes.subarray(start, end));
        out.push({ name, type: info & 0xf, bind: info >> 4, visibility: other & 3, defined: shndx !== 0 });
      }
      return out;
    }
    return null;
  };
  return { dynamic: table(SHT_DYNSYM) ?? [], all: table(SHT_SYMTAB) };
}
