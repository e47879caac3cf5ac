/**
 * The record of inputSchemas found valid before (src/json-schema/checked.ts): a schema recorded by
 * this checker is not held against the meta-schema again; anything else is, and only valid schemas
 * are ever recorded.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseSidecar } from "../../src/discovery/sidecar.ts";
import { CHECKED_LIMIT, CHECKER, checkedSchemas, checkedSchemasPath, SCHEMA_CHECK_REVISION } from "../../src/json-schema/checked.ts";
import { CALCULATOR, openSession, ROOT, tempDir } from "../helpers.ts";

const VALID = { type: "object", properties: { a: { type: "number" } }, required: ["a"] };
const INVALID = { type: "object", properties: { a: { type: "numbr" } } };

function sidecar(schema: unknown) {
  return JSON.stringify({ pluginContract: 4, name: "p", version: "1.0.0", tools: [{ name: "t", description: "d", inputSchema: schema }] });
}

function sha(schema: unknown) {
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(schema)).digest("hex");
}

function record(dir: string): { checker: string; schemas: string[] } {
  return JSON.parse(readFileSync(checkedSchemasPath(dir), "utf8"));
}

describe("schemas found valid before", () => {
  test("a valid schema is recorded by its SHA-256 under this checker; an invalid one is refused and never recorded", () => {
    using state = tempDir();
    parseSidecar(sidecar(VALID), "p.plugin.json", checkedSchemas(state.path));
    expect(record(state.path)).toEqual({ checker: CHECKER, schemas: [sha(VALID)] });

    using other = tempDir();
    expect(() => parseSidecar(sidecar(INVALID), "p.plugin.json", checkedSchemas(other.path))).toThrow(/not a valid JSON Schema/);
    expect(existsSync(checkedSchemasPath(other.path))).toBe(false);
  });

  test("a schema recorded by this checker is not checked again; one recorded by another checker is", () => {
    using state = tempDir();
    // An invalid schema's key, as if recorded: proof that the record is what decides.
    writeFileSync(checkedSchemasPath(state.path), JSON.stringify({ checker: CHECKER, schemas: [sha(INVALID)] }));
    expect(parseSidecar(sidecar(INVALID), "p.plugin.json", checkedSchemas(state.path)).tools[0]!.name).toBe("t");

    writeFileSync(checkedSchemasPath(state.path), JSON.stringify({ checker: "cxagent 0.0.1, schema check 1", schemas: [sha(INVALID)] }));
    expect(() => parseSidecar(sidecar(INVALID), "p.plugin.json", checkedSchemas(state.path))).toThrow(/'numbr'|numbr|not a valid JSON Schema/);
    // Without a record at all, as before.
    expect(() => parseSidecar(sidecar(INVALID), "p.plugin.json")).toThrow(/not a valid JSON Schema/);
  });

  test("a FIFO or a folder in its place is not waited on: counted as empty, and replaced by a file", () => {
    using state = tempDir();
    const path = checkedSchemasPath(state.path);
    expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);
    const known = checkedSchemas(state.path);
    expect(known.has(VALID)).toBe(false); // returns at once: nothing opened it for writing
    parseSidecar(sidecar(VALID), "p.plugin.json", known);
    expect(record(state.path)).toEqual({ checker: CHECKER, schemas: [sha(VALID)] });

    using other = tempDir();
    mkdirSync(checkedSchemasPath(other.path));
    expect(parseSidecar(sidecar(VALID), "p.plugin.json", checkedSchemas(other.path)).name).toBe("p"); // the write fails; the check does not
  });

  test("a corrupt or foreign record counts as empty and is replaced at the next write", () => {
    for (const text of ["{not json", JSON.stringify({ checker: CHECKER, schemas: "x" }), JSON.stringify({ checker: CHECKER, schemas: ["../../etc", 7] }), "null"]) {
      using state = tempDir();
      writeFileSync(checkedSchemasPath(state.path), text);
      const known = checkedSchemas(state.path);
      expect(known.has(VALID)).toBe(false);
      parseSidecar(sidecar(VALID), "p.plugin.json", known);
      expect(record(state.path)).toEqual({ checker: CHECKER, schemas: [sha(VALID)] });
    }
  });

  test("another process's additions are kept, the newest last, at most CHECKED_LIMIT", () => {
    using state = tempDir();
    const old = Array.from({ length: CHECKED_LIMIT }, (_, i) => sha({ i }));
    const first = checkedSchemas(state.path);
    expect(first.has(VALID)).toBe(false); // read now, before the other process writes
    writeFileSync(checkedSchemasPath(state.path), JSON.stringify({ checker: CHECKER, schemas: old }));
    first.remember(VALID);
    first.save();
    const schemas = record(state.path).schemas;
    expect(schemas.length).toBe(CHECKED_LIMIT);
    expect(schemas.at(-1)).toBe(sha(VALID));
    expect(schemas[0]).toBe(old[1]);
  });

  test("no state folder is made for it, and an unwritable one loses nothing but the record", () => {
    using dir = tempDir();
    expect(parseSidecar(sidecar(VALID), "p.plugin.json", checkedSchemas(join(dir.path, "state"))).name).toBe("p");
    expect(existsSync(join(dir.path, "state"))).toBe(false);

    // A state folder that is a regular file: the write fails, the check does not.
    const file = join(dir.path, "file");
    writeFileSync(file, "");
    expect(parseSidecar(sidecar(VALID), "p.plugin.json", checkedSchemas(file)).name).toBe("p");
  });

  test("inspecting a plugin records its schemas in the session's state folder", async () => {
    using dir = tempDir();
    const stateDir = join(dir.path, "state");
    mkdirSync(stateDir);
    await using session = await openSession({ stateDir });
    const inspected = session.inspect(CALCULATOR);
    const { schemas } = record(stateDir);
    expect(new Set(schemas)).toEqual(new Set(inspected.manifest.tools.map((t) => sha(t.inputSchema))));
    expect(readdirSync(stateDir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});

test("the checker's revision was raised when what it accepts changed", () => {
  // What `schemaProblems` accepts: its code, the meta-schemas, the validator's version. When this
  // fails, raise SCHEMA_CHECK_REVISION in src/json-schema/checked.ts and put the new values here.
  const dir = join(ROOT, "src/json-schema");
  const hasher = new Bun.CryptoHasher("sha256");
  for (const name of ["check.ts", ...readdirSync(dir).filter((f) => f.endsWith(".json")).sort()]) hasher.update(name).update(readFileSync(join(dir, name)));
  hasher.update(JSON.parse(readFileSync(join(ROOT, "node_modules/@cfworker/json-schema/package.json"), "utf8")).version);
  expect({ revision: SCHEMA_CHECK_REVISION, fingerprint: hasher.digest("hex") }).toEqual({ revision: 1, fingerprint: "c4b3aa999600a41d2c1fce90d20cadd53a409f9065584aca90e6f9f8e385bb16" });
});
