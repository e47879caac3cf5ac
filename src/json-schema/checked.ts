/**
 * The inputSchemas this build of cxagent has found valid before (`checked-schemas.json` in the
 * state folder), so that a sidecar read again, as every one-shot `cxagent invoke` reads it, is not
 * held against the 2020-12 meta-schema again: building that meta-validator and its first, cold run
 * cost a few milliseconds of every such command.
 *
 * Whether a schema is valid depends only on the schema and on the checker, so a schema is recorded
 * by the SHA-256 of its JSON text, and the record as a whole names the checker (CHECKER below); a
 * schema whose text differs, or a record made by another checker, is checked again. Only a valid
 * schema is recorded: one with problems is checked, and its problems reported, every time.
 *
 * It is a cache. A missing, unreadable or corrupt file counts as empty, as does anything but a
 * regular file of a sane size (a FIFO there is not waited on). A write that fails is skipped, and
 * so is one where the state folder does not exist yet. Two processes writing at once may drop each
 * other's additions; a dropped schema is just checked once more. Deleting the file is always safe.
 * Whoever can write it can write approvals.json beside it, which decides far more: it widens no
 * one's reach.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { readSmallFile, writeJsonAtomic } from "../files.ts";

/**
 * Raise it whenever what `schemaProblems` (check.ts) accepts changes: its code, the meta-schemas
 * beside it, or the validator's version. test/unit/checked-schemas.test.ts holds a fingerprint of
 * those files and fails until it is raised.
 */
export const SCHEMA_CHECK_REVISION = 1;

/** The checker a record was made by: a record by any other is ignored, and replaced at the next write. */
export const CHECKER = `cxagent ${pkg.version}, schema check ${SCHEMA_CHECK_REVISION}`;

/** At most this many schemas are kept, the most recently found valid last. */
export const CHECKED_LIMIT = 1000;

/** A record of CHECKED_LIMIT schemas is about 70 KB; a file larger than this is not one. */
const FILE_CAP = 1 << 20;

export function checkedSchemasPath(stateDir: string): string {
  return join(stateDir, "checked-schemas.json");
}

/** The schemas found valid before; `remember` marks one, `save` writes what was marked. */
export interface CheckedSchemas {
  has(schema: unknown): boolean;
  remember(schema: unknown): void;
  save(): void;
}

export function checkedSchemas(stateDir: string): CheckedSchemas {
  const path = checkedSchemasPath(stateDir);
  let known: Set<string> | null = null;
  const added: string[] = [];
  const read = () => (known ??= readRecord(path));
  return {
    has: (schema) => read().has(keyOf(schema)),
    remember: (schema) => {
      const key = keyOf(schema);
      if (!read().has(key)) added.push(key);
    },
    save: () => {
      // Not the one to make the state folder: that is the first approval's or grant's.
      if (!added.length || !existsSync(stateDir)) return;
      // Read again: another process may have added schemas since.
      const schemas = [...new Set([...readRecord(path), ...added])].slice(-CHECKED_LIMIT);
      added.length = 0;
      try {
        writeJsonAtomic(path, { checker: CHECKER, schemas });
      } catch {
        // A cache: the next command checks these schemas again.
      }
      known = new Set(schemas);
    },
  };
}

function keyOf(schema: unknown): string {
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(schema)).digest("hex");
}

function readRecord(path: string): Set<string> {
  const read = readSmallFile(path, FILE_CAP); // a FIFO in its place is not waited on
  if (!("text" in read)) return new Set();
  try {
    const record = JSON.parse(read.text) as { checker?: unknown; schemas?: unknown };
    if (record.checker !== CHECKER || !Array.isArray(record.schemas)) return new Set();
    return new Set(record.schemas.filter((s): s is string => typeof s === "string" && /^[0-9a-f]{64}$/.test(s)));
  } catch {
    return new Set();
  }
}
