/** No echo back (issue 40): where the marker is found in arguments, at any depth, and the refusal's words. */
import { expect, test } from "bun:test";
import { CxError } from "../../src/errors.ts";
import { markerAt, refuseEchoedMarker } from "../../src/secrets/echo.ts";

const M = "[REDACTED:github.token]";
const nestArrays = (n: number, inner: unknown) => Array.from({ length: n }).reduce<unknown>((v) => [v], inner);
const nestObjects = (n: number, inner: unknown) => Array.from({ length: n }).reduce<unknown>((v) => ({ k: v }), inner);

test("a marker after a nested value without one is still found, in objects and arrays", () => {
  expect(markerAt({ a: { x: 1, y: ["no"] }, b: `x ${M}` })).toBe("b");
  expect(markerAt([{ x: 1 }, ["no"], M])).toBe("[2]");
  expect(markerAt({ a: { x: 1 } })).toBeNull();
});

test("a marker nested deeper than any argument is read is still found (in the JSON text below the depth walked), never passed unseen", () => {
  // 257 arrays: the string is at depth 257, every array walked; 258: the last array is found by its text.
  expect(markerAt(nestArrays(257, M))).toBe("[0]".repeat(257));
  expect(markerAt(nestArrays(258, M))).toBe(`${"[0]".repeat(257)} (nested below it)`);
  expect(markerAt(nestObjects(258, M))).toBe(`${Array(257).fill("k").join(".")} (nested below it)`);
  expect(markerAt(nestObjects(300, { [M]: 1 }))).toEndWith(" (nested below it)");
  expect(markerAt(nestArrays(300, "clean"))).toBeNull();
  expect(markerAt(nestObjects(300, "clean"))).toBeNull();
});

test("the refusal names the plugin, what was called and where, says what to do, and carries both as details", () => {
  expect(() => refuseEchoedMarker("gh", "tool 'post'", { body: "ok" })).not.toThrow();
  let error: CxError | null = null;
  try {
    refuseEchoedMarker("gh", "tool 'post'", { body: ["x", `token ${M}`] });
  } catch (e) {
    error = e as CxError;
  }
  expect(error).toBeInstanceOf(CxError);
  expect(error!.code).toBe("E_REDACTED_ECHO");
  expect(error!.message).toBe(`the arguments of plugin 'gh' tool 'post' hold a redaction marker ([REDACTED:…]) at body[1]: the model sent back a value cxagent redacted, not the value; the call was not made`);
  expect(error!.hint).toBe("a secret is shown to the model only as its marker; have the plugin read the secret itself (context.secret / host->secret) instead of taking it as an argument");
  expect(error!.details).toEqual({ plugin: "gh", at: "body[1]" });
});
