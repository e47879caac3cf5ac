/**
 * The pure parts of `cxagent check`: arguments made from an inputSchema, the JSON Schema rules,
 * every difference between two manifests, the host's --check flag, and reading a library's symbols.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { callArguments, requiredOf, valueFor, wrongTypeCalls } from "../../src/check/arguments.ts";
import { schemaMistakes, unknownKeywords } from "../../src/check/schema-lints.ts";
import { hostArgv, readHostArgv } from "../../src/protocol/host-args.ts";
import { checkManifest, type Manifest } from "../../src/protocol/manifest.ts";
import { allDifferences, firstDifference } from "../../src/session/compare.ts";
import { readSymbols } from "../../src/elf/symbols.ts";
import { fixtureLibrary } from "../helpers.ts";

describe("arguments from an inputSchema", () => {
  const calc = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] };

  test("the schema's own examples come first, then generated variants, none twice", () => {
    const schema = { ...calc, examples: [{ a: 2, b: 3 }, "not an object", { a: 2, b: 3 }] };
    const calls = callArguments(schema, 4);
    expect(calls[0]).toEqual({ args: { a: 2, b: 3 }, from: "example" });
    expect(calls.slice(1).every((c) => c.from === "generated")).toBe(true);
    expect(new Set(calls.map((c) => JSON.stringify(c.args))).size).toBe(calls.length);
    expect(calls).toHaveLength(4);
  });

  test("values keep to each keyword: enum, const, limits, multipleOf, lengths, formats, patterns", () => {
    for (let v = 0; v < 6; v++) {
      expect(["red", "green"]).toContain(valueFor({ enum: ["red", "green"] }, v) as string);
      expect(valueFor({ const: 7 }, v)).toBe(7);
      const n = valueFor({ type: "integer", minimum: 1, maximum: 3 }, v) as number;
      expect(Number.isInteger(n) && n >= 1 && n <= 3).toBe(true);
      const x = valueFor({ type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 }, v) as number;
      expect(x > 0 && x < 1).toBe(true);
      expect((valueFor({ type: "integer", minimum: 1, multipleOf: 5 }, v) as number) % 5).toBe(0);
      const s = valueFor({ type: "string", minLength: 12, maxLength: 14 }, v) as string;
      expect(s.length >= 12 && s.length <= 14).toBe(true);
      expect(valueFor({ type: "string", format: "email" }, v)).toMatch(/^[^@]+@example\.com$/);
      expect(valueFor({ type: "string", pattern: "^[0-9]+$" }, v)).toMatch(/^[0-9]+$/);
      expect(valueFor({ type: ["null", "boolean"] }, v)).toBeBoolean();
    }
    // Variants differ, so calls made at once can be told apart.
    expect(valueFor({ type: "string" }, 0)).not.toBe(valueFor({ type: "string" }, 1));
  });

  test("$ref, allOf, anyOf and nested arrays of objects are followed", () => {
    const schema = {
      type: "object",
      $defs: { point: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
      properties: {
        at: { $ref: "#/$defs/point" },
        path: { type: "array", minItems: 2, items: { $ref: "#/$defs/point" } },
        either: { anyOf: [{ type: "string", pattern: "(" }, { type: "boolean" }] },
        both: { allOf: [{ type: "integer" }, { minimum: 10, maximum: 10 }] },
      },
      required: ["at", "path", "either", "both"],
    };
    const [first] = callArguments(schema, 1);
    expect(first!.args).toEqual({ at: { x: 1 }, path: [{ x: 1 }, { x: 2 }], either: true, both: 10 });
  });

  test("a required property no value fits makes no call, rather than a wrong one", () => {
    expect(callArguments({ type: "object", properties: { id: { type: "string", pattern: "^[A-Z]{3}-\\d{4}$" } }, required: ["id"] }, 3)).toEqual([]);
    expect(callArguments({ type: "object", properties: { id: { $ref: "https://elsewhere/schema" } }, required: ["id"] }, 3)).toEqual([]);
  });

  test("wrong types: one property at a time, of another JSON type than declared", () => {
    const calls = wrongTypeCalls({ type: "object", properties: { text: { type: "string" }, n: { type: "integer" }, on: { type: "boolean" }, tags: { type: "array" } } }, { text: "a", n: 1 });
    expect(calls.map((c) => [c.property, c.expected, c.value])).toEqual([
      ["text", "string", 12345],
      ["n", "integer", "not a number"],
      ["on", "boolean", "not a boolean"],
      ["tags", "array", "not an array"],
    ]);
    expect(calls[1]!.args).toEqual({ text: "a", n: "not a number" });
    expect(requiredOf({ required: ["a", 5, "b"] })).toEqual(["a", "b"]);
  });
});

describe("what a meta-schema does not see in an inputSchema", () => {
  test("a local $ref to nothing, and limits no value meets, at any depth; values of enum, const, default and examples are not schemas", () => {
    const schema = {
      type: "object",
      $defs: { point: { type: "object" } },
      properties: {
        ok: { $ref: "#/$defs/point" },
        gone: { $ref: "#/$defs/missing" },
        n: { type: "integer", minimum: 5, maximum: 2 },
        list: { type: "array", items: { type: "string", minLength: 3, maxLength: 1 } },
        e: { enum: [{ $ref: "#/nowhere" }], default: { minimum: 9, maximum: 1 }, examples: [{ $ref: "#/nothing" }] },
      },
    };
    expect(schemaMistakes(schema).map((m) => m.path)).toEqual(["properties.gone.$ref", "properties.n", "properties.list.items"]);
    expect(schemaMistakes(schema)[0]!.message).toBe('properties.gone.$ref: "#/$defs/missing" points at nothing in this schema');
    expect(schemaMistakes({ type: "object", properties: { a: { type: "string" } } })).toEqual([]);
  });

  test("unknown keywords are found at any depth, with the known one they are close to; x- annotations are left alone", () => {
    expect(unknownKeywords({ type: "object", requird: ["a"], properties: { a: { type: "string", minLenght: 1, "x-ui": "wide" } }, anyOf: [{ titel: "t" }] })).toEqual([
      { path: "requird", keyword: "requird", near: "required" },
      { path: "properties.a.minLenght", keyword: "minLenght", near: "minLength" },
      { path: "anyOf[0].titel", keyword: "titel", near: "title" },
    ]);
    expect(unknownKeywords({ type: "object", properties: { examples: { type: "array" } }, examples: [{ anything: 1 }] })).toEqual([]);
  });
});

describe("every difference between sidecar and describe", () => {
  const parse = (m: unknown): Manifest => {
    const checked = checkManifest(m);
    if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
    return checked.manifest;
  };
  const sidecar = parse({
    pluginContract: 4, name: "p", version: "1.0.0",
    tools: [{ name: "a", description: "one" }, { name: "b" }],
    commands: [{ name: "x" }, { name: "y", summary: "why" }],
  });

  test("all of them, in the order the first is chosen; the first is firstDifference's", () => {
    const described = parse({
      pluginContract: 4, name: "p", version: "1.0.1", spawns: true,
      tools: [{ name: "a", description: "uno", gated: true }, { name: "c" }],
      commands: [{ name: "y", summary: "because" }, { name: "z" }],
    });
    const all = allDifferences(sidecar, described);
    expect(all).toEqual([
      'the sidecar declares version="1.0.0", describe returned version="1.0.1"',
      "the sidecar declares spawns=false, describe returned spawns=true",
      "tool 'b' is in the sidecar but describe did not return it",
      "tool 'c' was returned by describe but is not in the sidecar",
      `tool 'a': the sidecar declares description="one", describe returned description="uno"`,
      "tool 'a': the sidecar declares gated=false, describe returned gated=true",
      "command 'x' is in the sidecar but describe did not return it",
      "command 'z' was returned by describe but is not in the sidecar",
      `command 'y' differs: the sidecar declares {"name":"y","summary":"why"}, describe returned {"name":"y","summary":"because"}`,
    ]);
    expect(firstDifference(sidecar, described)).toBe(all[0]!);
    expect(allDifferences(sidecar, sidecar)).toEqual([]);
  });

  test("commands in another order are named, not reported as the same command twice", () => {
    const reordered = parse({ ...sidecar, commands: [{ name: "y", summary: "why" }, { name: "x" }] });
    expect(allDifferences(sidecar, reordered)).toEqual([
      "command 'x' is number 1 in the sidecar but number 2 in what describe returned",
      "command 'y' is number 2 in the sidecar but number 1 in what describe returned",
    ]);
  });
});

test("the plugin host's --check flag survives its command line, and nothing else changes", () => {
  const base = { library: "/p/x.so", kind: "native" as const, sessionId: null, snapshot: null, libraryFd: 3, dependencies: [{ fd: 4, path: "lib/y.so" }], parentPid: 9, poolCap: 16, pollMs: 20, spinUs: null };
  expect(hostArgv(base)).not.toContain("--check");
  const argv = hostArgv({ ...base, check: true });
  expect(argv.at(-1)).toBe("--check");
  expect(readHostArgv(argv)).toEqual({ ...base, check: true });
  expect(readHostArgv(["/p/x.so", "--check", "--poll-ms", "5"])).toMatchObject({ check: true, pollMs: 5 });
  expect(readHostArgv(hostArgv(base))).toEqual(base);
  expect(readHostArgv(hostArgv({ ...base, kind: "cortex", sessionId: "s1", check: true }))).toEqual({ ...base, kind: "cortex", sessionId: "s1", check: true });
});

test("symbols: what a library exports, and what it defines but hides", () => {
  const good = readSymbols(readFileSync(fixtureLibrary("echo")));
  const exported = good.dynamic.filter((s) => s.defined && s.bind !== 0).map((s) => s.name);
  expect(exported).toContain("cxagent_plugin_invoke");
  expect(exported).toContain("cxagent_plugin_free");
  const hidden = readSymbols(readFileSync(fixtureLibrary("exports-hidden")));
  expect(hidden.dynamic.some((s) => s.name === "cxagent_plugin_invoke" && s.defined)).toBe(false);
  // The linker made the hidden global a local symbol of the static table.
  expect(hidden.all?.find((s) => s.name === "cxagent_plugin_invoke")).toMatchObject({ defined: true, bind: 0, type: 2 });
  expect(() => readSymbols(new TextEncoder().encode("not an ELF file at all, just text"))).toThrow("it is not an ELF file");
});
