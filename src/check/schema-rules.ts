/**
 * Whether a tool's inputSchema is a valid JSON Schema (drafts 2020-12 and 7, the ones model APIs
 * and MCP clients read), by the keywords' own rules: each keyword that takes a schema holds one,
 * each that takes a number, a count, a list of names or a pattern holds that. A minimal check
 * written for `cxagent check`, with no dependency; issue 14 brings a full meta-schema validator
 * (@cfworker/json-schema) with the same signature (`schemaProblems`), which can replace it.
 * Unknown keywords are allowed by JSON Schema, so they are only worth a warning: `unknownKeywords`.
 */

export interface SchemaProblem {
  /** Where, as a JSON path inside the schema ("properties.a.type"); "" for the schema itself. */
  path: string;
  /** The keyword that is wrong. */
  rule: string;
  message: string;
}

type Node = Record<string, unknown>;

const TYPES = new Set(["null", "boolean", "object", "array", "number", "string", "integer"]);
const DRAFTS = new Set([
  "https://json-schema.org/draft/2020-12/schema",
  "https://json-schema.org/draft/2019-09/schema",
  "http://json-schema.org/draft-07/schema",
  "http://json-schema.org/draft-06/schema",
]);

const SCHEMA = ["additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames", "not", "if", "then", "else", "contentSchema"];
const SCHEMA_MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_LIST = ["allOf", "anyOf", "oneOf", "prefixItems"];
const NUMBER = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
const COUNT = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"];
const BOOLEAN = ["uniqueItems", "readOnly", "writeOnly", "deprecated"];
const STRING = ["title", "description", "$comment", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef", "format", "contentMediaType", "contentEncoding"];
const OTHER = ["type", "enum", "const", "default", "examples", "required", "pattern", "multipleOf", "items", "dependentRequired", "dependencies", "$schema", "$vocabulary"];
const KNOWN = new Set([...SCHEMA, ...SCHEMA_MAP, ...SCHEMA_LIST, ...NUMBER, ...COUNT, ...BOOLEAN, ...STRING, ...OTHER]);

const isObject = (x: unknown): x is Node => x !== null && typeof x === "object" && !Array.isArray(x);
const kindOf = (x: unknown) => (x === null ? "null" : Array.isArray(x) ? "an array" : typeof x === "object" ? "an object" : `a ${typeof x}`);

function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  const step = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  return path ? (step.startsWith('"') ? `${path}[${step}]` : `${path}.${step}`) : step.startsWith('"') ? `[${step}]` : step;
}

/** Why `schema` (a tool's inputSchema) is not a valid JSON Schema; empty when it is one. */
export function schemaProblems(schema: Record<string, unknown>): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const say = (path: string, rule: string, message: string) => problems.push({ path, rule, message: `${path || "the schema"}: ${message}` });
  if (schema.$schema !== undefined && (typeof schema.$schema !== "string" || !DRAFTS.has(schema.$schema.replace(/#$/, "")))) {
    say("$schema", "$schema", `${JSON.stringify(schema.$schema)} is not a JSON Schema draft cxagent knows (use https://json-schema.org/draft/2020-12/schema or http://json-schema.org/draft-07/schema#)`);
  }
  walk(schema, "", schema, say, 0);
  return problems;
}

function walk(node: unknown, path: string, root: Node, say: (path: string, rule: string, message: string) => void, depth: number): void {
  if (typeof node === "boolean") return;
  if (!isObject(node)) {
    say(path, "schema", `must be a schema (an object, or true or false), not ${kindOf(node)}`);
    return;
  }
  if (depth > 64) return;
  const at = (key: string) => join(path, key);
  const sub = (value: unknown, p: string) => walk(value, p, root, say, depth + 1);
  for (const [key, value] of Object.entries(node)) {
    if (SCHEMA.includes(key)) sub(value, at(key));
    else if (SCHEMA_MAP.includes(key)) {
      if (!isObject(value)) say(at(key), key, `must be an object mapping names to schemas, not ${kindOf(value)}`);
      else for (const [name, inner] of Object.entries(value)) {
        if (key === "patternProperties" && !validPattern(name)) say(join(at(key), name), key, `${JSON.stringify(name)} is not a valid regular expression`);
        sub(inner, join(at(key), name));
      }
    } else if (SCHEMA_LIST.includes(key)) {
      if (!Array.isArray(value) || (value.length === 0 && key !== "prefixItems")) say(at(key), key, `must be a non-empty array of schemas, not ${Array.isArray(value) ? "an empty array" : kindOf(value)}`);
      else value.forEach((inner, i) => sub(inner, join(at(key), i)));
    } else if (NUMBER.includes(key)) {
      if (typeof value !== "number") say(at(key), key, `must be a number, not ${kindOf(value)}${typeof value === "boolean" ? " (draft 4's boolean exclusiveMinimum/Maximum is not draft 7 or 2020-12)" : ""}`);
    } else if (COUNT.includes(key)) {
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0) say(at(key), key, `must be a whole number, 0 or more, not ${JSON.stringify(value)}`);
    } else if (BOOLEAN.includes(key)) {
      if (typeof value !== "boolean") say(at(key), key, `must be true or false, not ${kindOf(value)}`);
    } else if (STRING.includes(key)) {
      if (typeof value !== "string") say(at(key), key, `must be a string, not ${kindOf(value)}`);
    }
  }
  checkType(node, at, say);
  if ("required" in node) {
    const r = node.required;
    if (!Array.isArray(r) || r.some((x) => typeof x !== "string")) {
      say(at("required"), "required", typeof r === "boolean"
        ? "must be an array of property names on the object; draft 4's required: true inside a property is not draft 7 or 2020-12"
        : `must be an array of property names, not ${kindOf(r)}`);
    } else if (new Set(r).size !== r.length) say(at("required"), "required", "names a property more than once");
  }
  if ("enum" in node && !Array.isArray(node.enum)) say(at("enum"), "enum", `must be an array of the allowed values, not ${kindOf(node.enum)}`);
  if ("examples" in node && !Array.isArray(node.examples)) say(at("examples"), "examples", `must be an array, not ${kindOf(node.examples)}`);
  if ("multipleOf" in node && !(typeof node.multipleOf === "number" && node.multipleOf > 0)) say(at("multipleOf"), "multipleOf", `must be a number above 0, not ${JSON.stringify(node.multipleOf)}`);
  if ("pattern" in node && (typeof node.pattern !== "string" || !validPattern(node.pattern))) say(at("pattern"), "pattern", `${JSON.stringify(node.pattern)} is not a valid regular expression`);
  if ("items" in node) {
    if (Array.isArray(node.items)) node.items.forEach((inner, i) => sub(inner, join(at("items"), i)));
    else sub(node.items, at("items"));
  }
  if ("dependentRequired" in node) {
    const d = node.dependentRequired;
    if (!isObject(d) || Object.values(d).some((v) => !Array.isArray(v) || v.some((x) => typeof x !== "string"))) say(at("dependentRequired"), "dependentRequired", "must map property names to arrays of property names");
  }
  for (const [low, high] of [["minimum", "maximum"], ["minLength", "maxLength"], ["minItems", "maxItems"], ["minProperties", "maxProperties"]] as const) {
    const a = node[low], b = node[high];
    if (typeof a === "number" && typeof b === "number" && a > b) say(path, low, `${low} ${a} is above ${high} ${b}: no value can pass`);
  }
  if (typeof node.$ref === "string" && node.$ref.startsWith("#") && !resolves(node.$ref, root)) say(at("$ref"), "$ref", `${JSON.stringify(node.$ref)} points at nothing in this schema`);
}

function checkType(node: Node, at: (key: string) => string, say: (path: string, rule: string, message: string) => void) {
  if (!("type" in node)) return;
  const t = node.type;
  const list = Array.isArray(t) ? t : [t];
  if (Array.isArray(t) && t.length === 0) say(at("type"), "type", "must name at least one type");
  for (const one of list) {
    if (typeof one !== "string" || !TYPES.has(one)) {
      const near = typeof one === "string" ? nearest(one, [...TYPES]) : null;
      say(at("type"), "type", `${JSON.stringify(one)} is not a JSON Schema type (${[...TYPES].join(", ")})${near ? `; did you mean "${near}"?` : ""}`);
    }
  }
  if (Array.isArray(t) && new Set(t).size !== t.length) say(at("type"), "type", "names a type more than once");
}

function validPattern(pattern: string): boolean {
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}

function resolves(ref: string, root: Node): boolean {
  if (ref === "#") return true;
  if (!ref.startsWith("#/")) return true; // an anchor ("#name"): not followed here
  let at: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(at) && !Array.isArray(at)) return false;
    at = (at as Record<string, unknown>)[key];
    if (at === undefined) return false;
  }
  return true;
}

/** Keywords JSON Schema does not define, at any depth, each with the known one it is closest to. */
export function unknownKeywords(schema: unknown, path = ""): { path: string; keyword: string; near: string | null }[] {
  const out: { path: string; keyword: string; near: string | null }[] = [];
  const visit = (node: unknown, p: string, depth: number) => {
    if (!isObject(node) || depth > 64) return;
    for (const [key, value] of Object.entries(node)) {
      if (!KNOWN.has(key) && !key.startsWith("x-")) out.push({ path: join(p, key), keyword: key, near: nearest(key, [...KNOWN]) });
      if (SCHEMA.includes(key) || key === "items") visit(value, join(p, key), depth + 1);
      if (SCHEMA_MAP.includes(key) && isObject(value)) for (const [name, inner] of Object.entries(value)) visit(inner, join(join(p, key), name), depth + 1);
      if (SCHEMA_LIST.includes(key) && Array.isArray(value)) value.forEach((inner, i) => visit(inner, join(join(p, key), i), depth + 1));
    }
  };
  visit(schema, path, 0);
  return out;
}

/** The candidate within two edits of `word`, if one is. */
function nearest(word: string, candidates: string[]): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const c of candidates) {
    const d = distance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const saved = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = saved;
    }
  }
  return row[b.length]!;
}
