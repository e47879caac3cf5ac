/**
 * The result store (issue 41): whole results too long to deliver, kept by their content's SHA-256
 * in `<state>/results/sha256-<hex>` (0600, in a 0700 folder, written to a temp file and renamed),
 * each with `sha256-<hex>.json` saying which plugin and tool made it and when. A reference
 * `cxref:sha256-<hex>` names one; it is read only through the state folder that made it (there is
 * no other index), and its hash is checked on every read: a file whose bytes do not match, that is
 * not a plain 0600 file of this user, or that the store did not name, is reported and never
 * trusted. Last use is the file's modification time (touched on each read); past the store's cap
 * (default 1 GiB) the least recently used go first; `reap` removes those unused for maxAgeMs.
 */
import { createHash, type Hash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, utimesSync, writeSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../errors.ts";
import { writeJsonAtomic } from "../files.ts";
import { tryLock } from "../lock.ts";

export const RESULT_DEFAULTS = { capBytes: 1 << 30, maxAgeMs: 7 * 24 * 3_600_000 };
export const REF_PREFIX = "cxref:sha256-";
const REF = /^cxref:sha256-([0-9a-f]{64})$/;
const DATA = /^sha256-[0-9a-f]{64}$/;
const META = /^sha256-[0-9a-f]{64}\.json$/;
const TEMP = /^\.\d+\.[0-9a-z.]+\.tmp$/;

/** Who made a result. */
export interface ResultOrigin {
  plugin: string;
  tool: string;
}

/** A stored result, as a caller is told of it. */
export interface StoredResult {
  ref: string;
  sha256: string;
  bytes: number;
}

export interface ResultInfo extends StoredResult, Partial<ResultOrigin> {
  createdAt?: string;
  /** Last read or written (ms since the epoch). */
  usedAt: number;
}

export interface StoreOptions {
  capBytes?: number;
  maxAgeMs?: number;
}

/** The hex of a reference that is exactly `cxref:sha256-<64 hex>`; null for anything else. */
export function refHex(text: string): string | null {
  return REF.exec(text)?.[1] ?? null;
}

export class ResultStore {
  readonly folder: string;
  readonly capBytes: number;
  readonly maxAgeMs: number;

  constructor(stateDir: string, options: StoreOptions = {}) {
    this.folder = join(stateDir, "results");
    this.capBytes = options.capBytes ?? RESULT_DEFAULTS.capBytes;
    this.maxAgeMs = options.maxAgeMs ?? RESULT_DEFAULTS.maxAgeMs;
  }

  private swept = false;

  /**
   * Starts writing a result piece by piece (spilled while it is read); `finish` stores it. The
   * first write of a store removes the temp files of writes whose process ended (kill -9).
   */
  begin(): ResultWriter {
    try {
      mkdirSync(this.folder, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new CxError("E_STATE", `cannot store a result in ${this.folder}: ${(error as Error).message}`, {
        hint: "make it a folder cxagent can write (it is under the state folder), or call the tool again without a delivery cap",
        cause: error,
      });
    }
    if (!this.swept) {
      this.swept = true;
      for (const path of this.scan().leftovers) removeIfAbandoned(path);
    }
    return new ResultWriter(this);
  }

  /** Stores `content` whole (UTF-8) and evicts what the cap no longer holds. */
  put(content: string | Uint8Array, origin: ResultOrigin): StoredResult {
    const writer = this.begin();
    writer.write(typeof content === "string" ? Buffer.from(content, "utf8") : content);
    return writer.finish(origin);
  }

  pathOf(hex: string): string {
    return join(this.folder, `sha256-${hex}`);
  }

  /** What a reference names, checked (the whole file is hashed): its info; E_NOT_FOUND or E_STATE otherwise. */
  info(ref: string): ResultInfo {
    return this.open(ref, 0, 0).info;
  }

  /** The stored text of a reference, whole and checked. */
  text(ref: string): string {
    return this.read(ref).bytes.toString("utf8");
  }

  /**
   * Reads `length` bytes from `offset` (clamped to the result), hashing the whole file as it goes:
   * a file whose bytes are not its name's is refused. Touches its last use.
   */
  read(ref: string, offset = 0, length?: number): { bytes: Buffer; info: ResultInfo } {
    const hex = this.hexOf(ref);
    const size = this.checkedFile(hex, ref).size;
    const from = Math.min(Math.max(0, offset), size);
    return this.open(ref, from, Math.min(length ?? size - from, size - from));
  }

  private hexOf(ref: string): string {
    const hex = refHex(ref);
    if (!hex) throw new CxError("E_INVALID_INPUT", `${JSON.stringify(ref.slice(0, 100))} is not a result reference; one reads cxref:sha256- and 64 hexadecimal digits`);
    return hex;
  }

  /** The file of a reference: a plain file of this user's, 0600, or a refusal naming what is wrong. */
  private checkedFile(hex: string, ref: string): { size: number; mtimeMs: number } {
    const path = this.pathOf(hex);
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      throw new CxError("E_NOT_FOUND", `result ${ref} is not in ${this.folder}: it was never stored through this state folder, or it expired or was evicted`, {
        hint: "run the tool again for a fresh result; a reference is read only through the state folder that made it",
      });
    }
    if (!plainOfMine(stat)) {
      throw untrusted(path, `it is not a plain file of this user's with mode 0600 (mode ${(stat.mode & 0o777).toString(8)})`);
    }
    if (Date.now() - stat.mtimeMs > this.maxAgeMs) {
      throw new CxError("E_NOT_FOUND", `result ${ref} has expired: unused for over ${Math.round(this.maxAgeMs / 3_600_000)} hours`, {
        hint: "run the tool again for a fresh result; reap removes expired results",
      });
    }
    return { size: stat.size, mtimeMs: stat.mtimeMs };
  }

  private open(ref: string, offset: number, length: number): { bytes: Buffer; info: ResultInfo } {
    const hex = this.hexOf(ref);
    this.checkedFile(hex, ref);
    const path = this.pathOf(hex);
    // The name is opened without following a link and without waiting (a FIFO), and what was
    // opened is checked again: a file swapped in after the check above is refused, never read.
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (error) {
      throw untrusted(path, `it could not be opened as a plain file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    const opened = fstatSync(fd);
    if (!plainOfMine(opened)) {
      closeSync(fd);
      throw untrusted(path, `it was replaced by something that is not a plain file of this user's with mode 0600 (mode ${(opened.mode & 0o777).toString(8)})`);
    }
    const out = Buffer.allocUnsafe(length);
    const hash = createHash("sha256");
    let size = 0;
    try {
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const got = readSync(fd, chunk, 0, chunk.length, size);
        if (got <= 0) break;
        hash.update(chunk.subarray(0, got));
        // The part of [offset, offset + length) in this chunk.
        const from = Math.max(offset, size);
        const to = Math.min(offset + length, size + got);
        if (to > from) chunk.copy(out, from - offset, from - size, to - size);
        size += got;
      }
      if (fstatSync(fd).size !== size) throw untrusted(path, "it changed while it was read");
    } finally {
      closeSync(fd);
    }
    if (hash.digest("hex") !== hex) throw untrusted(path, "its bytes do not hash to its name");
    const now = new Date();
    utimesSync(path, now, now);
    return { bytes: out, info: { ref, sha256: hex, bytes: size, usedAt: now.getTime(), ...this.originOf(hex) } };
  }

  private originOf(hex: string): Partial<ResultOrigin> & { createdAt?: string } {
    try {
      const meta = JSON.parse(readFileSync(`${this.pathOf(hex)}.json`, "utf8")) as Record<string, unknown>;
      const str = (x: unknown) => (typeof x === "string" ? x : undefined);
      return { plugin: str(meta.plugin), tool: str(meta.tool), createdAt: str(meta.createdAt) };
    } catch {
      return {};
    }
  }

  /**
   * The folder's results, least recently used first, and what in it is not the store's: files it
   * did not name, results not 0600, and leftovers of writes that were cut short (reported, never read).
   */
  scan(): { results: { hex: string; bytes: number; usedAt: number }[]; foreign: string[]; leftovers: string[] } {
    let names: string[];
    try {
      names = readdirSync(this.folder);
    } catch {
      return { results: [], foreign: [], leftovers: [] };
    }
    const results: { hex: string; bytes: number; usedAt: number }[] = [];
    const foreign: string[] = [];
    const leftovers: string[] = [];
    for (const name of names) {
      const path = join(this.folder, name);
      if (META.test(name)) continue;
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        continue;
      }
      if (DATA.test(name) && stat.isFile() && (stat.mode & 0o777) === 0o600) results.push({ hex: name.slice(7), bytes: stat.size, usedAt: stat.mtimeMs });
      else if (TEMP.test(name) && stat.isFile()) {
        // A write under way holds its temp file's lock; one an ended process left holds none.
        if (abandoned(path)) leftovers.push(path);
      } else foreign.push(path);
    }
    results.sort((a, b) => a.usedAt - b.usedAt);
    return { results, foreign, leftovers };
  }

  /** Removes the least recently used results until the rest fit the cap (`keep` is removed last). */
  evict(keep?: string): string[] {
    const { results } = this.scan();
    let total = results.reduce((sum, r) => sum + r.bytes, 0);
    const removed: string[] = [];
    for (const r of results) {
      if (total <= this.capBytes) break;
      if (r.hex === keep) continue; // the result just stored stays, even alone over the cap
      this.remove(r.hex);
      removed.push(`${REF_PREFIX}${r.hex}`);
      total -= r.bytes;
    }
    return removed;
  }

  /** Removes results unused for maxAgeMs (`dryRun`: only says which); reports what is not the store's. */
  reap(options: { dryRun?: boolean } = {}): { removed: string[]; foreign: string[]; leftovers: string[] } {
    const { results, foreign, leftovers: found } = this.scan();
    // Writes cut short (the process ended mid-write) are the store's own leftovers: removed.
    const leftovers = options.dryRun ? found : found.filter((path) => removeIfAbandoned(path));
    const removed: string[] = [];
    for (const r of results) {
      if (Date.now() - r.usedAt <= this.maxAgeMs) continue;
      if (!options.dryRun) this.remove(r.hex);
      removed.push(`${REF_PREFIX}${r.hex}`);
    }
    return { removed, foreign, leftovers };
  }

  private remove(hex: string) {
    rmSync(this.pathOf(hex), { force: true });
    rmSync(`${this.pathOf(hex)}.json`, { force: true });
  }
}

const plainOfMine = (stat: { isFile(): boolean; mode: number; uid: number }) =>
  stat.isFile() && (stat.mode & 0o777) === 0o600 && !(process.getuid && stat.uid !== process.getuid());

/** Opens a temp file without following a link; null when it is gone or cannot be opened. */
function openTemp(path: string): number | null {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
}

/** A result's temp file (ResultWriter), as against an origin file's (files.ts writeJsonAtomic, which holds no lock). */
const RESULT_TEMP = ".result.tmp";

/**
 * Whether the writer of the temp file `path`, open at `fd`, has ended: a result's writer holds
 * flock(2)'s lock on its temp file while it writes, and the kernel drops that lock when the
 * process ends in any way. Any other temp file (or without flock): when untouched for an hour.
 */
function writerEnded(fd: number, path: string): boolean {
  const free = path.endsWith(RESULT_TEMP) ? tryLock(fd) : null;
  return free === null ? Date.now() - fstatSync(fd).mtimeMs >= 3_600_000 : free;
}

function abandoned(path: string): boolean {
  const fd = openTemp(path);
  if (fd === null) return false;
  try {
    return writerEnded(fd, path);
  } finally {
    closeSync(fd);
  }
}

/** Removes a temp file whose writer has ended, holding its lock meanwhile (a writer checks its file is still there once it has the lock). */
function removeIfAbandoned(path: string): boolean {
  const fd = openTemp(path);
  if (fd === null) return false;
  try {
    if (!writerEnded(fd, path)) return false;
    rmSync(path, { force: true });
    return true;
  } finally {
    closeSync(fd);
  }
}

function untrusted(path: string, why: string): CxError {
  return new CxError("E_STATE", `the stored result ${path} is not trusted: ${why}`, {
    hint: `cxagent did not write it so, or it was changed since; remove it (the tool can be run again for a fresh result)`,
    details: { path },
  });
}

/** A result being written: bytes go to a temp file and into the hash; finish names it by the hash. */
export class ResultWriter {
  private readonly temp: string;
  private fd: number | null;
  private readonly hash: Hash = createHash("sha256");
  private size = 0;

  constructor(private readonly store: ResultStore) {
    // The lock says "being written" to another process's sweep; a sweep that took the file in the
    // instant before the lock has removed it (no link left): then another name.
    for (let attempt = 0; ; attempt++) {
      const temp = join(store.folder, `.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}${RESULT_TEMP}`);
      const fd = openSync(temp, "wx", 0o600);
      if (tryLock(fd) !== false && fstatSync(fd).nlink > 0) {
        this.temp = temp;
        this.fd = fd;
        return;
      }
      closeSync(fd);
      if (attempt === 8) throw new CxError("E_STATE", `cannot start a result file in ${store.folder}: another process removed each one as it was made`);
    }
  }

  get bytes(): number {
    return this.size;
  }

  write(bytes: Uint8Array): void {
    if (this.fd === null) throw new CxError("E_INTERNAL", "a result was written after it was finished");
    this.hash.update(bytes);
    let at = 0;
    while (at < bytes.length) at += writeSync(this.fd, bytes, at, bytes.length - at);
    this.size += bytes.length;
  }

  finish(origin: ResultOrigin): StoredResult {
    if (this.fd === null) throw new CxError("E_INTERNAL", "a result was finished twice");
    const fd = this.fd;
    this.fd = null;
    const hex = this.hash.digest("hex");
    const path = this.store.pathOf(hex);
    try {
      writeJsonAtomic(`${path}.json`, { plugin: origin.plugin, tool: origin.tool, bytes: this.size, createdAt: new Date().toISOString() });
      renameSync(this.temp, path); // still locked: no sweep takes it first
    } catch (error) {
      rmSync(this.temp, { force: true });
      throw error instanceof CxError ? error : new CxError("E_STATE", `cannot store a result in ${this.store.folder}: ${(error as Error).message}`, { cause: error });
    } finally {
      closeSync(fd);
    }
    this.store.evict(hex);
    return { ref: `${REF_PREFIX}${hex}`, sha256: hex, bytes: this.size };
  }

  /** Gives up: the temp file goes. */
  abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.temp, { force: true });
  }
}
