/**
 * What a meta-schema cannot see in a tool's inputSchema, and `cxagent check` names: a local `$ref`
 * that points at nothing, limits no value can meet (minimum above maximum), and keywords JSON
 * Schema does not define (allowed, so validators ignore them: a typo such as `requird` goes
 * unnoticed). Whether it is a valid JSON Schema at all is json-schema/check.ts's `schemaProblems`.
 */
import { editDistance } from "../suggest.ts";

export interface SchemaLint {
  /** Where, as a JSON path inside the schema ("properties.a.type"); "" for the schema itself. */
  path: string;
  message: string;
}

type Node = Record<string, unknown>;

const SCHEMA = ["additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames", "not", "if", "then", "else", "contentSchema", "items"];
const SCHEMA_MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_LIST = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
const OTHER = [
  "type", "enum", "const", "default", "examples", "required", "pattern", "multipleOf", "dependentRequired", "dependencies", "$schema", "$vocabulary",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
  "minContains", "maxContains", "uniqueItems", "readOnly", "writeOnly", "deprecated", "title", "description", "$comment", "$id", "$anchor",
  "$dynamicAnchor", "$ref", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "format", "contentMediaType", "contentEncoding",
];
const KNOWN = new Set([...SCHEMA, ...SCHEMA_MAP, ...SCHEMA_LIST, ...OTHER]);

const isObject = (x: unknown): x is Node => x !== null && typeof x === "object" && !Array.isArray(x);

function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  if (!/^[A-Za-z_$][\w$]*$/.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path ? `${path}.${key}` : key;
}

/** Calls `visit` on every subschema (the schema itself first), never on values such as enum's or default's. */
function eachSchema(schema: unknown, visit: (node: Node, path: string) => void, path = "", depth = 0): void {
  if (!isObject(schema) || depth > 64) return;
  visit(schema, path);
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA.includes(key)) eachSchema(value, visit, join(path, key), depth + 1);
    if (SCHEMA_MAP.includes(key) && isObject(value)) for (const [name, inner] of Object.entries(value)) eachSchema(inner, visit, join(join(path, key), name), depth + 1);
    if (SCHEMA_LIST.includes(key) && Array.isArray(value)) value.forEach((inner, i) => eachSchema(inner, visit, join(join(path, key), i), depth + 1));
  }
}

/** Local `$ref`s that resolve to nothing, and limits that exclude every value: each makes the schema useless. */
export function schemaMistakes(schema: Node): SchemaLint[] {
  const out: SchemaLint[] = [];
  eachSchema(schema, (node, path) => {
    const ref = node.$ref;
    if (typeof ref === "string" && ref.startsWith("#/") && !resolves(ref, schema)) {
      out.push({ path: join(path, "$ref"), message: `${join(path, "$ref")}: ${JSON.stringify(ref)} points at nothing in this schema` });
    }
    for (const [low, high] of [["minimum", "maximum"], ["minLength", "maxLength"], ["minItems", "maxItems"], ["minProperties", "maxProperties"]] as const) {
      const a = node[low], b = node[high];
      if (typeof a === "number" && typeof b === "number" && a > b) out.push({ path, message: `${path || "the schema"}: ${low} ${a} is above ${high} ${b}, so no value can pass` });
    }
  });
  return out;
}

function resolves(ref: string, root: Node): boolean {
  let at: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (at === null || typeof at !== "object") return false;
    at = (at as Record<string, unknown>)[key];
    if (at === undefined) return false;
  }
  return true;
}

/** Keywords JSON Schema does not define, at any depth, each with the known one it is closest to (x-… is left alone). */
export function unknownKeywords(schema: unknown): { path: string; keyword: string; near: string | null }[] {
  const out: { path: string; keyword: string; near: string | null }[] = [];
  eachSchema(schema, (node, path) => {
    for (const key of Object.keys(node)) if (!KNOWN.has(key) && !key.startsWith("x-")) out.push({ path: join(path, key), keyword: key, near: nearest(key) });
  });
  return out;
}

/** The keyword within two edits of `word`, if one is. */
function nearest(word: string): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const known of KNOWN) {
    const d = editDistance(word.toLowerCase(), known.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [known, d];
  }
  return best;
}
