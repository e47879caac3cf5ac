/**
 * JSON Schema for tools' arguments (@cfworker/json-schema: drafts 2020-12 and 07, no code
 * generation, a few milliseconds to load; ajv spent ~100 ms compiling the meta-schema on every
 * run, which every describe and list would pay). Two checks:
 *
 *  - `schemaProblems`: is a manifest's `inputSchema` a valid schema of its draft? (the official
 *    meta-schemas, copied here from json-schema.org; `$schema` picks the draft, 2020-12 by default);
 *  - `checkArguments`: do a call's arguments satisfy it? With the latitude models need, and
 *    nothing more: a string holding a JSON number where the schema wants a number or an integer
 *    becomes that number, and 0/1 or "true"/"false" where it wants a boolean become the boolean —
 *    only where the value failed its `type`, and only if the result then passes.
 *
 * Leaf module: imports nothing of cxagent but errors.
 */
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import draft07 from "./draft-07.json" with { type: "json" };
import draft2020 from "./2020-12.json" with { type: "json" };
import applicator from "./2020-12-applicator.json" with { type: "json" };
import content from "./2020-12-content.json" with { type: "json" };
import core from "./2020-12-core.json" with { type: "json" };
import formatAnnotation from "./2020-12-format-annotation.json" with { type: "json" };
import metaData from "./2020-12-meta-data.json" with { type: "json" };
import unevaluated from "./2020-12-unevaluated.json" with { type: "json" };
import validation from "./2020-12-validation.json" with { type: "json" };

type Draft = "7" | "2020-12";

const DRAFTS: Record<string, Draft> = {
  "http://json-schema.org/draft-07/schema": "7",
  "https://json-schema.org/draft/2020-12/schema": "2020-12",
};

/** How deeply a call's arguments may nest: well inside what the plugin host reads (512 levels, whole request). */
export const ARGUMENTS_DEPTH_LIMIT = 256;

/** A problem found in a schema or in arguments: where (a JSON path such as `items[2].name`) and which rule. */
export interface SchemaProblem {
  path: string;
  rule: string;
  message: string;
}

/** Built when a schema of that draft is first checked: most runs meet only one of the two. */
const metaValidators: Partial<Record<Draft, Validator>> = {};

/**
 * The 2020-12 meta-schema refers to itself with `$dynamicRef: "#meta"`, which the validator does
 * not follow into subschemas (a bad `properties.a.type` would pass). Nothing here extends the
 * meta-schema, so every such reference means the 2020-12 meta-schema itself: a plain `$ref`.
 */
function staticRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(staticRefs);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$dynamicRef" && inner === "#meta") out.$ref = draft2020.$id;
    else out[key] = staticRefs(inner);
  }
  return out;
}

function metaValidator(draft: Draft): Validator {
  return (metaValidators[draft] ??= draft === "7" ? new Validator(draft07 as Schema, "7", false) : draft2020Validator());
}

function draft2020Validator(): Validator {
  const validator = new Validator(staticRefs(draft2020) as Schema, "2020-12", false);
  for (const vocabulary of [core, applicator, unevaluated, validation, metaData, formatAnnotation, content]) validator.addSchema(staticRefs(vocabulary) as Schema);
  return validator;
}

/** The draft a schema is written in, by its `$schema`; null for one this build does not check. */
export function draftOf(schema: Record<string, unknown>): Draft | null {
  const declared = schema.$schema;
  if (declared === undefined) return "2020-12";
  if (typeof declared !== "string") return null;
  return DRAFTS[declared.replace(/#$/, "")] ?? null;
}

/** "#/properties/a/0" → "properties.a[0]" (JSON pointer segments, unescaped). */
export function pointerToPath(pointer: string): string {
  const segments = pointer.replace(/^#/, "").split("/").slice(1).map((s) => decodeURIComponent(s).replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = "";
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** Keywords that only say "something inside failed": their inner errors say what. */
const WRAPPERS = new Set([
  "properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems", "contains",
  "allOf", "$ref", "$dynamicRef", "$recursiveRef", "dependentSchemas", "dependencies", "unevaluatedProperties",
  "unevaluatedItems", "propertyNames", "if", "then", "else",
]);

/**
 * The errors that say what is wrong, in words: the innermost ones. Where a value matched none of
 * several alternatives (anyOf, oneOf), one error says so: the list of allowed values when there
 * is one, else the alternative's own.
 */
function leaves(errors: readonly OutputUnit[]): OutputUnit[] {
  const alternatives = errors.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
  const under = (e: OutputUnit, a: OutputUnit) => e !== a && e.instanceLocation === a.instanceLocation && e.keywordLocation.startsWith(a.keywordLocation);
  const kept = errors.filter((e) => {
    const within = alternatives.find((a) => under(e, a));
    if (within) return e.keyword === "enum";
    if (alternatives.includes(e)) return !errors.some((o) => under(o, e) && o.keyword === "enum");
    return true;
  });
  const specific = kept
    .filter((e) => !WRAPPERS.has(e.keyword) || kept.every((o) => o === e || !o.instanceLocation.startsWith(e.instanceLocation)))
    .map((e) => {
      if (e.keyword !== "false") return e;
      // A `false` schema allows nothing there: say which keyword put it there (additionalProperties: false).
      const parent = e.instanceLocation.slice(0, e.instanceLocation.lastIndexOf("/"));
      const by = errors.find((o) => o.instanceLocation === parent && WRAPPERS.has(o.keyword));
      return { ...e, keyword: by?.keyword ?? "false", error: "is not allowed here" };
    });
  const seen = new Set<string>();
  return specific.filter((e) => {
    const key = `${e.instanceLocation} ${e.keyword} ${e.error}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function problemOf(error: OutputUnit): SchemaProblem {
  let path = pointerToPath(error.instanceLocation);
  let message = error.error.replace(/^Instance /, "").replace(/\.$/, "");
  message = message.charAt(0).toLowerCase() + message.slice(1);
  const required = /does not have required property "(.*)"$/.exec(error.error.replace(/\.$/, ""));
  if (error.keyword === "required" && required) {
    path = path ? `${path}.${required[1]}` : required[1]!;
    message = "is required but missing";
  }
  const type = /^Instance type "(\w+)" is invalid\. Expected (.+)\.$/.exec(error.error);
  if (error.keyword === "type" && type) message = `is ${withArticle(type[1]!)}, must be ${type[2]!.split(/,\s*/).map((t) => withArticle(t.replace(/"/g, ""))).join(" or ")}`;
  return { path, rule: error.keyword, message: `${path || "the arguments"}: ${message} (${error.keyword})` };
}

function withArticle(type: string): string {
  return type === "null" ? "null" : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** Why a manifest's inputSchema is not a valid JSON Schema (empty when it is one). */
export function schemaProblems(schema: Record<string, unknown>): SchemaProblem[] {
  const draft = draftOf(schema);
  if (draft === null) {
    return [{ path: "$schema", rule: "$schema", message: `$schema ${JSON.stringify(schema.$schema)} is not a draft cxagent checks: use ${Object.keys(DRAFTS).join(" or ")}` }];
  }
  const result = metaValidator(draft).validate(schema);
  if (result.valid) {
    try {
      new Validator(schema as Schema, draft, false);
    } catch (error) {
      return [{ path: "", rule: "$ref", message: (error as Error).message }];
    }
    return [];
  }
  return leaves(result.errors).map((e) => {
    const p = problemOf(e);
    return { ...p, message: p.message.replace(/^the arguments: /, "") };
  });
}

export type ArgumentsCheck = { ok: true; value: Record<string, unknown>; coerced: string[] } | { ok: false; problems: SchemaProblem[] };

/** A compiled check of one tool's arguments against its inputSchema. */
export class ArgumentsValidator {
  /** Null for a schema that asks only for an object (the default when a tool declares none). */
  private readonly validator: Validator | null;

  constructor(schema: Record<string, unknown>) {
    this.validator = asksOnlyForObject(schema) ? null : new Validator(schema as Schema, draftOf(schema) ?? "2020-12", false);
  }

  /** `args` is an object already (the caller made sure): that is all some schemas ask. */
  check(args: Record<string, unknown>): ArgumentsCheck {
    if (this.validator === null) return { ok: true, value: args, coerced: [] };
    let value = args;
    const coerced: string[] = [];
    for (let round = 0; round < 4; round++) {
      const result = this.validator.validate(value);
      if (result.valid) return { ok: true, value, coerced };
      const errors = leaves(result.errors);
      const fixes = errors.map((e) => coercion(value, e)).filter((f) => f !== null);
      if (fixes.length === 0 || fixes.length !== errors.filter((e) => e.keyword === "type").length || round === 3) {
        return { ok: false, problems: errors.map(problemOf) };
      }
      if (value === args) value = structuredClone(args);
      for (const fix of fixes) {
        fix.apply(value);
        coerced.push(fix.path);
      }
    }
    return { ok: false, problems: leaves(this.validator.validate(value).errors).map(problemOf) };
  }
}

/** Words that say nothing about the instance. */
const ANNOTATIONS = new Set(["$schema", "title", "description", "$comment"]);

/**
 * `{"type": "object"}`, perhaps with annotations: what every tool without an inputSchema has. Its
 * check is the one the caller made already, so no validator runs for it on every call.
 */
function asksOnlyForObject(schema: Record<string, unknown>): boolean {
  return schema.type === "object" && Object.keys(schema).every((k) => k === "type" || ANNOTATIONS.has(k));
}

/** The latitude for a value that failed its `type`: a numeric string for a number, 0/1 or "true"/"false" for a boolean. */
function coercion(root: Record<string, unknown>, error: OutputUnit): { path: string; apply: (root: Record<string, unknown>) => void } | null {
  if (error.keyword !== "type") return null;
  const expected = /Expected (.+)\.$/.exec(error.error)?.[1]?.match(/"(\w+)"/g)?.map((t) => t.slice(1, -1)) ?? [];
  const segments = error.instanceLocation.replace(/^#/, "").split("/").slice(1).map((s) => decodeURIComponent(s).replace(/~1/g, "/").replace(/~0/g, "~"));
  if (segments.length === 0) return null;
  let parent: unknown = root;
  for (const s of segments.slice(0, -1)) parent = (parent as Record<string, unknown>)?.[s];
  if (parent === null || typeof parent !== "object") return null;
  const key = segments.at(-1)!;
  const current = (parent as Record<string, unknown>)[key];
  let replacement: unknown;
  if (typeof current === "string" && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(current.trim())) {
    const n = Number(current.trim());
    if (expected.includes("number") || (expected.includes("integer") && Number.isInteger(n))) replacement = n;
  }
  if (replacement === undefined && expected.includes("boolean")) {
    if (current === 0 || current === "false") replacement = false;
    if (current === 1 || current === "true") replacement = true;
  }
  if (replacement === undefined) return null;
  return {
    path: pointerToPath(error.instanceLocation),
    apply: (copy) => {
      let target: unknown = copy;
      for (const s of segments.slice(0, -1)) target = (target as Record<string, unknown>)[s];
      (target as Record<string, unknown>)[key] = replacement;
    },
  };
}
