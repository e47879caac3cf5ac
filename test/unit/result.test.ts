import { expect, test } from "bun:test";
import * as v from "valibot";
import { JobResultSchema, toJobResult } from "../../src/protocol/result.ts";

// toJobResult is JobResultSchema written out by hand for speed: the two must agree on everything.
const VALUES = [undefined, null, true, false, 0, 3, -1, 2.5, "", "text", "user", "policy", [], [1], {}, { content: "x" }];
const FIELDS = ["success", "exitCode", "errorMessage", "permissionDenied", "decidedBy", "output", "logFile", "durationMs"];

test("the hand-written normalizer agrees with JobResultSchema on every field and value", () => {
  let checked = 0;
  for (const field of FIELDS) {
    for (const value of VALUES) {
      const input: Record<string, unknown> = { extra: "ignored" };
      if (value !== undefined) input[field] = value;
      const viaSchema = v.parse(JobResultSchema, input);
      const expected = { ...viaSchema, durationMs: viaSchema.durationMs ?? 7 };
      expect(toJobResult(input, 7.2)).toEqual(expected);
      checked++;
    }
  }
  expect(checked).toBe(FIELDS.length * VALUES.length);
});
