/**
 * A tool's result `output` against its outputSchema (issue 42 point 4): no coercion (unlike the
 * arguments' check), and each problem named by its path.
 */
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import { draftOf, pointerToPath } from "./check.ts";

/** Keywords whose error only says that one below them failed. */
const WRAPPERS = new Set(["properties", "items", "prefixItems", "additionalProperties", "allOf", "anyOf", "oneOf", "$ref", "dependentSchemas", "if", "then", "else", "contains", "not", "unevaluatedProperties", "unevaluatedItems", "patternProperties"]);

export class OutputValidator {
  private readonly validator: Validator;

  constructor(schema: Record<string, unknown>) {
    this.validator = new Validator(schema as Schema, draftOf(schema) ?? "2020-12", false);
  }

  /** What is wrong with `output`, each naming its path (`answer`, `items[2].id`); empty when it matches. */
  problems(output: unknown): string[] {
    const result = this.validator.validate(output);
    if (result.valid) return [];
    const specific = result.errors.filter((e) => !WRAPPERS.has(e.keyword));
    return [...new Set((specific.length ? specific : result.errors).map(wording))];
  }
}

function wording(error: OutputUnit): string {
  const path = pointerToPath(error.instanceLocation);
  const required = /does not have required property "(.*)"/.exec(error.error);
  if (error.keyword === "required" && required) return `${path ? `${path}.` : ""}${required[1]}: is required but missing (required)`;
  const type = /^Instance type "(\w+)" is invalid\. Expected (.+)\.$/.exec(error.error);
  const article = (t: string) => (t === "null" ? "null" : `${/^[aeiou]/.test(t) ? "an" : "a"} ${t}`);
  const message = type
    ? `is ${article(type[1]!)}, must be ${type[2]!.split(/,\s*/).map((t) => article(t.replace(/"/g, ""))).join(" or ")}`
    : error.error.replace(/^Instance /, "").replace(/\.$/, "");
  return `${path || "the output"}: ${message.charAt(0).toLowerCase()}${message.slice(1)} (${error.keyword})`;
}
