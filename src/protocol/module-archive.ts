/**
 * How the parent hands a module plugin's approved files to its plugin host: one sealed in-memory
 * file (the same kind of copy a native library gets), holding every file of the load set as it
 * was hashed. The plugin host imports only from these bytes (plugin-host/module-loader.ts).
 *
 *   "CXMODULE1\n", u32 LE header length, the header (UTF-8 JSON: the folder, the entry module,
 *   each file's relative path and size, in order, and each symbolic link's path and target text),
 *   then the files' bytes, one after another.
 */
export interface ModuleArchive {
  /** The plugin's folder (real path): what messages name, never read. */
  folder: string;
  /** The module the sidecar pairs with, relative to the folder, '/' separators. */
  entry: string;
  /** Every file of the load set by relative path. */
  files: Map<string, Uint8Array>;
  /** Every symbolic link of the load set (each resolves inside it): relative path → target text. */
  links: Map<string, string>;
}

const MAGIC = new TextEncoder().encode("CXMODULE1\n");

export function encodeArchive(archive: ModuleArchive): Uint8Array {
  const list = [...archive.files].map(([path, bytes]) => ({ path, size: bytes.length }));
  const header = new TextEncoder().encode(JSON.stringify({ folder: archive.folder, entry: archive.entry, files: list, links: [...archive.links] }));
  const total = MAGIC.length + 4 + header.length + list.reduce((n, f) => n + f.size, 0);
  const out = new Uint8Array(total);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setUint32(MAGIC.length, header.length, true);
  out.set(header, MAGIC.length + 4);
  let at = MAGIC.length + 4 + header.length;
  for (const bytes of archive.files.values()) {
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}

/** Reads an archive; throws an Error saying what is wrong with it. */
export function decodeArchive(bytes: Uint8Array): ModuleArchive {
  if (bytes.length < MAGIC.length + 4 || !MAGIC.every((b, i) => bytes[i] === b)) throw new Error("the module archive does not start with CXMODULE1");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(MAGIC.length, true);
  let at = MAGIC.length + 4;
  if (at + headerLength > bytes.length) throw new Error("the module archive's header is cut short");
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(at, at + headerLength))) as {
    folder: string;
    entry: string;
    files: { path: string; size: number }[];
    links: [string, string][];
  };
  at += headerLength;
  const files = new Map<string, Uint8Array>();
  for (const { path, size } of header.files) {
    if (at + size > bytes.length) throw new Error(`the module archive is cut short in ${path}`);
    files.set(path, bytes.subarray(at, at + size));
    at += size;
  }
  if (at !== bytes.length) throw new Error("the module archive has bytes after its last file");
  if (!files.has(header.entry)) throw new Error(`the module archive does not hold its entry module ${header.entry}`);
  return { folder: header.folder, entry: header.entry, files, links: new Map(header.links) };
}
