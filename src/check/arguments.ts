/**
 * Arguments for `cxagent check`'s calls, made from a tool's inputSchema: the schema's own examples
 * first, then values built from each property's type and limits (several variants, each with
 * different values, so concurrent calls can be told apart), the call without arguments, and calls
 * with one argument of the wrong type. Pure: no plugin involved.
 */

type Schema = Record<string, unknown>;
type Args = Record<string, unknown>;

const isObject = (x: unknown): x is Schema => x !== null && typeof x === "object" && !Array.isArray(x);

/** Deeper than this, a generated value is cut short: schemas that recurse would never end. */
const DEPTH = 6;

/** The objects in `inputSchema.examples` (JSON Schema's own keyword), valid or not. */
export function schemaExamples(schema: Schema): Args[] {
  return Array.isArray(schema.examples) ? schema.examples.filter(isObject) : [];
}

export function requiredOf(schema: Schema): string[] {
  return Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [];
}

/** Follows a local "$ref" (#/$defs/x, #/definitions/x, #/properties/...) within `root`. */
function resolve(schema: Schema, root: Schema): Schema | null {
  const ref = schema.$ref;
  if (typeof ref !== "string") return schema;
  if (!ref.startsWith("#")) return null;
  let at: unknown = root;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    at = isObject(at) ? at[key] : undefined;
  }
  return isObject(at) ? at : null;
}

/** The type to build: the first non-null one it names, else what its keywords imply. */
function typeOf(schema: Schema): string | null {
  const t = schema.type;
  const types = typeof t === "string" ? [t] : Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : [];
  const chosen = types.find((x) => x !== "null") ?? types[0];
  if (chosen) return chosen;
  if (isObject(schema.properties) || Array.isArray(schema.required)) return "object";
  if (schema.items !== undefined) return "array";
  if (typeof schema.minLength === "number" || typeof schema.pattern === "string" || typeof schema.format === "string") return "string";
  if (typeof schema.minimum === "number" || typeof schema.maximum === "number") return "number";
  return null;
}

const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : undefined);

function numberFor(schema: Schema, variant: number, integer: boolean): number {
  const min = num(schema.minimum), max = num(schema.maximum);
  const exMin = num(schema.exclusiveMinimum), exMax = num(schema.exclusiveMaximum);
  let low = min ?? exMin;
  let high = max ?? exMax;
  if (low === undefined && high === undefined) [low, high] = [1, 100];
  else if (low === undefined) low = high! - 100;
  else if (high === undefined) high = low + 100;
  const lowOpen = min === undefined && exMin !== undefined;
  const highOpen = max === undefined && exMax !== undefined;
  const whole = (lo: number, hi: number) => (hi < lo ? lo : lo + (variant % (hi - lo + 1)));
  const step = num(schema.multipleOf);
  if (step !== undefined && step > 0) {
    const first = Math.ceil(low! / step) * step + (lowOpen && Math.ceil(low! / step) * step === low ? step : 0);
    const count = Math.max(1, Math.floor((high! - first) / step) + 1 - (highOpen ? 1 : 0));
    return first + (variant % count) * step;
  }
  if (integer) return whole(lowOpen ? Math.floor(low!) + 1 : Math.ceil(low!), highOpen ? Math.ceil(high!) - 1 : Math.floor(high!));
  const span = high! - low!;
  // Whole numbers strictly inside a wide range; inside a narrow one, never on its edges.
  if (span >= 8) return whole(Math.floor(low!) + 1, Math.ceil(high!) - 1);
  return low! + (span * ((variant % 7) + 1)) / 8;
}

const FORMATS: Record<string, (v: number) => string> = {
  email: (v) => `user${v + 1}@example.com`,
  uri: (v) => `https://example.com/item/${v + 1}`,
  url: (v) => `https://example.com/item/${v + 1}`,
  "uri-reference": (v) => `item/${v + 1}`,
  date: (v) => `2024-01-${String((v % 28) + 1).padStart(2, "0")}`,
  "date-time": (v) => `2024-01-${String((v % 28) + 1).padStart(2, "0")}T12:00:00Z`,
  time: (v) => `12:${String(v % 60).padStart(2, "0")}:00Z`,
  uuid: (v) => `00000000-0000-4000-8000-${String(v + 1).padStart(12, "0")}`,
  ipv4: (v) => `192.0.2.${(v % 254) + 1}`,
  hostname: (v) => `host${v + 1}.example.com`,
};

/** A string for the schema, or null when its pattern admits none of the candidates tried. */
function stringFor(schema: Schema, variant: number): string | null {
  const format = typeof schema.format === "string" ? FORMATS[schema.format] : undefined;
  const candidates = format ? [format(variant)] : [`example-${variant + 1}`, `example${variant + 1}`, `${variant + 1}`, `Example ${variant + 1}`, "a"];
  const min = num(schema.minLength) ?? 0;
  const max = num(schema.maxLength);
  let pattern: RegExp | null = null;
  if (typeof schema.pattern === "string") {
    try {
      pattern = new RegExp(schema.pattern, "u");
    } catch {
      return null;
    }
  }
  for (let text of candidates) {
    if (text.length < min) text = text + "x".repeat(min - text.length);
    if (max !== undefined && text.length > max) text = `${variant + 1}`.slice(0, Math.max(max, 0)).padEnd(Math.min(min, max), "x");
    if (pattern && !pattern.test(text)) continue;
    return text;
  }
  return null;
}

/** A value valid for `schema` as far as its keywords tell, `variant` choosing among several; undefined when none can be made. */
export function valueFor(schema: unknown, variant: number, root: Schema = isObject(schema) ? schema : {}, depth = 0): unknown {
  if (schema === true || schema === undefined) return `example-${variant + 1}`;
  if (!isObject(schema)) return undefined;
  const s = resolve(schema, root);
  if (!s) return undefined;
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[variant % s.enum.length];
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[variant % s.examples.length];
  if (variant === 0 && "default" in s) return s.default;
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = s[key];
    if (Array.isArray(options) && options.length) {
      for (let k = 0; k < options.length; k++) {
        const v = valueFor(options[(variant + k) % options.length], variant, root, depth + 1);
        if (v !== undefined) return v;
      }
      return undefined;
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length) {
    const merged: Schema = { ...s };
    delete merged.allOf;
    for (const part of s.allOf) if (isObject(part)) Object.assign(merged, resolve(part, root) ?? {});
    return valueFor(merged, variant, root, depth + 1);
  }
  switch (typeOf(s)) {
    case "string":
      return stringFor(s, variant) ?? undefined;
    case "integer":
      return numberFor(s, variant, true);
    case "number":
      return numberFor(s, variant, false);
    case "boolean":
      return variant % 2 === 0;
    case "null":
      return null;
    case "array": {
      if (depth >= DEPTH) return [];
      const count = Math.max(num(s.minItems) ?? 1, 0);
      const limit = Math.min(count, num(s.maxItems) ?? count, 16);
      const items = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : null;
      const out: unknown[] = [];
      for (let i = 0; i < limit; i++) {
        const v = valueFor(items ? items[i] ?? s.items : s.items, variant + i, root, depth + 1);
        if (v === undefined) return undefined;
        out.push(v);
      }
      return out;
    }
    case "object":
    case null:
      return depth >= DEPTH ? {} : objectFor(s, variant, root, depth);
    default:
      return undefined;
  }
}

function objectFor(s: Schema, variant: number, root: Schema, depth: number): Args | undefined {
  const properties = isObject(s.properties) ? s.properties : {};
  const required = requiredOf(s);
  // The first variant sends what is required; later ones every declared property, so calls differ.
  const names = variant === 0 && required.length ? required : [...new Set([...required, ...Object.keys(properties)])];
  const out: Args = {};
  for (const name of names) {
    const v = valueFor(properties[name] ?? true, variant, root, depth + 1);
    if (v === undefined) {
      if (required.includes(name)) return undefined;
      continue;
    }
    out[name] = v;
  }
  return out;
}

/** Up to `count` argument objects for a tool: its examples, then generated variants, without repeats. */
export function callArguments(schema: Schema, count: number): { args: Args; from: "example" | "generated" }[] {
  const out: { args: Args; from: "example" | "generated" }[] = [];
  const seen = new Set<string>();
  const push = (args: Args, from: "example" | "generated") => {
    const key = JSON.stringify(args);
    if (seen.has(key) || out.length >= count) return;
    seen.add(key);
    out.push({ args, from });
  };
  for (const example of schemaExamples(schema)) push(example, "example");
  for (let variant = 0; out.length < count && variant < count * 3; variant++) {
    const v = valueFor({ ...schema, examples: undefined, type: schema.type ?? "object" }, variant, schema);
    if (isObject(v)) push(v, "generated");
  }
  return out;
}

/** A JSON value of another type than `type`, and one a model might send by mistake. */
function wrongValue(type: string): unknown {
  switch (type) {
    case "string":
      return 12345;
    case "integer":
    case "number":
      return "not a number";
    case "boolean":
      return "not a boolean";
    case "array":
      return "not an array";
    case "object":
      return "not an object";
    default:
      return { unexpected: true };
  }
}

/** Calls with one argument of the wrong type each, the rest as the first valid call has them. */
export function wrongTypeCalls(schema: Schema, base: Args, limit = 8): { property: string; expected: string; value: unknown; args: Args }[] {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const out: { property: string; expected: string; value: unknown; args: Args }[] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (out.length >= limit || !isObject(property)) continue;
    const resolved = resolve(property, schema);
    const type = resolved ? typeOf(resolved) : null;
    if (!type || type === "null") continue;
    const value = wrongValue(type);
    out.push({ property: name, expected: type, value, args: { ...base, [name]: value } });
  }
  return out;
}
