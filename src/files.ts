/**
 * Files cxagent owns: written atomically (a temp file beside the target, then rename) and read
 * strictly. A corrupt file is reported by path and left alone for inspection, never replaced.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import * as v from "valibot";
import { CxError } from "./errors.ts";
import { describeProblems } from "./protocol/manifest.ts";
import { toProblems } from "./protocol/issues.ts";
import { withFileLock } from "./lock.ts";

/**
 * The system's folder for temporary files, as node:os tmpdir() finds it on Linux ($TMPDIR, $TMP,
 * $TEMP, else /tmp; no trailing slash), without loading node:os: that cost a one-shot command
 * about 1 ms.
 */
export function tempFolder(env = process.env): string {
  const dir = env.TMPDIR || env.TMP || env.TEMP || "/tmp";
  return dir.length > 1 && dir.endsWith("/") ? dir.slice(0, -1) : dir;
}

export function writeJsonAtomic(path: string, value: unknown): void {
  const temp = join(dirname(path), `.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`);
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(temp, JSON.stringify(value, null, 2) + "\n", { mode: 0o600 });
    renameSync(temp, path);
  } catch (error) {
    try {
      rmSync(temp, { force: true });
    } catch {
      // Nothing was written there (Bun 1.4.5's rmSync answers EFAULT, not ENOENT, when a folder on
      // the path is a file): the write's own error is the one to report.
    }
    throw new CxError("E_STATE", `cannot write ${path}: ${(error as Error).message}`, {
      cause: error,
      hint: `check that ${dirname(path)} exists and is writable, or use another state folder`,
      next: { do: "choose-folder", which: "state", path: dirname(path) },
    });
  }
}

/**
 * Reads and validates a JSON file; `fallback` when it does not exist. `plainlyValid`, when given,
 * is a quicker check that accepts only what `schema` accepts (and has no transform to apply): what
 * it accepts is returned as parsed, anything else is checked by `schema`, which names the problem.
 */
export function readJsonStrict<S extends v.GenericSchema>(path: string, schema: S, fallback: v.InferOutput<S>, what: string, plainlyValid?: (value: unknown) => boolean): v.InferOutput<S> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return fallback;
    throw new CxError("E_STATE", `cannot read ${what} ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw corrupt(path, what, `it is not valid JSON (${(error as Error).message})`);
  }
  if (plainlyValid?.(parsed)) return parsed as v.InferOutput<S>;
  const result = v.safeParse(schema, parsed);
  if (!result.success) throw corrupt(path, what, `it does not have the expected shape:\n${describeProblems(toProblems(result.issues, what))}`);
  return result.output;
}

/**
 * Read → modify → rename under the file's lock (src/lock.ts), so that a concurrent writer's change
 * is never lost. `modify` returns the new content, or null to leave the file as it is. A corrupt
 * file is reported and left untouched, as by readJsonStrict.
 */
export function updateJsonLocked<S extends v.GenericSchema>(
  path: string,
  schema: S,
  fallback: v.InferOutput<S>,
  what: string,
  modify: (current: v.InferOutput<S>) => v.InferOutput<S> | null,
): v.InferOutput<S> {
  return withFileLock(path, () => {
    const current = readJsonStrict(path, schema, fallback, what);
    const next = modify(current);
    if (next === null) return current;
    writeJsonAtomic(path, next);
    return next;
  });
}

/**
 * A regular file's text, read only if it is one and at most `cap` bytes: opened non-blocking, so a
 * FIFO in its place is not waited on, and read to one byte past the cap whatever its size said (it
 * may grow meanwhile). Otherwise why not: there is none, it cannot be opened, it is not a regular
 * file, or it is too large.
 */
export type SmallFile = { text: string } | { missing: true } | { unreadable: string } | { notFile: true } | { tooLarge: true };

export function readSmallFile(path: string, cap: number): SmallFile {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { missing: true };
    return { unreadable: (error as Error).message };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { notFile: true };
    const buffer = Buffer.alloc(Math.min(stat.size, cap) + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0) break;
      length += n;
    }
    if (length > cap) return { tooLarge: true };
    return { text: buffer.toString("utf8", 0, length) };
  } finally {
    closeSync(fd);
  }
}

function corrupt(path: string, what: string, why: string): CxError {
  return new CxError("E_STATE", `the ${what} ${path} is corrupt: ${why}`, {
    hint: "it was left untouched for you to inspect; fix it by hand, or move it away to start from an empty one",
    details: { path },
  });
}
