/**
 * ArgumentsValidator (src/json-schema/check.ts): a schema that asks only for an object (what a tool
 * without an inputSchema gets) is answered without a validator; any other word still binds.
 */
import { expect, test } from "bun:test";
import { ArgumentsValidator } from "../../src/json-schema/check.ts";

test("a schema that asks only for an object, annotations or not, takes any object as it is", () => {
  for (const schema of [{ type: "object" }, { type: "object", title: "t", description: "d", $comment: "c", $schema: "https://json-schema.org/draft/2020-12/schema" }]) {
    const args = { a: "1", nested: { b: [1, 2] } };
    const checked = new ArgumentsValidator(schema).check(args);
    expect(checked).toEqual({ ok: true, value: args, coerced: [] });
    if (checked.ok) expect(checked.value).toBe(args); // not copied
  }
});

test("one more word than type and annotations, and the schema is checked: required, properties, additionalProperties", () => {
  const required = new ArgumentsValidator({ type: "object", required: ["a"] }).check({});
  expect(required.ok).toBe(false);
  const closed = new ArgumentsValidator({ type: "object", additionalProperties: false }).check({ x: 1 });
  expect(closed.ok).toBe(false);
  const typed = new ArgumentsValidator({ type: "object", properties: { n: { type: "number" } } }).check({ n: "5" });
  expect(typed).toEqual({ ok: true, value: { n: 5 }, coerced: ["n"] });
  const notObject = new ArgumentsValidator({ type: "object", description: "d", properties: { s: { type: "string" } } }).check({ s: 3 });
  expect(notObject.ok).toBe(false);
});
