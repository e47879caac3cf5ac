/**
 * session/compare.ts at its edges: structural equality of JSON values (key order ignored, array
 * order and length not, null and arrays never equal to objects), and the list of differences
 * between two manifests with its limit, a missing command, and a command moved.
 */
import { describe, expect, test } from "bun:test";
import { allDifferences, firstDifference, sameJson } from "../../src/session/compare.ts";
import { checkManifest, type Manifest } from "../../src/protocol/manifest.ts";

describe("sameJson", () => {
  test.each([
    [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }],
    [[], []],
    [{}, {}],
    [null, null],
    ["x", "x"],
    [[{ a: null }], [{ a: null }]],
  ])("equal: %j and %j", (a, b) => {
    expect(sameJson(a, b)).toBe(true);
    expect(sameJson(b, a)).toBe(true);
  });

  test.each([
    [{ a: 1 }, { a: 2 }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [{ a: 1, b: undefined }, { a: 1, c: undefined }],
    [[1, 2], [2, 1]],
    [[1, 2], [1, 2, 3]],
    [[1], [1, 1]],
    [[], {}],
    [{ 0: "a", length: 1 }, ["a"]],
    [null, {}],
    [{}, null],
    [null, []],
    [null, "null"],
    [1, "1"],
    [0, false],
    ["a", "b"],
    [{ a: {} }, { a: null }],
    [{ a: null }, { a: {} }],
    [[null], [{}]],
    [[{}], [null]],
  ])("different: %j and %j", (a, b) => {
    expect(sameJson(a, b)).toBe(false);
    expect(sameJson(b, a)).toBe(false);
  });
});

describe("allDifferences", () => {
  const parse = (m: unknown): Manifest => {
    const checked = checkManifest(m);
    if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
    return checked.manifest;
  };
  const base = { pluginContract: 4, name: "p", version: "1.0.0", tools: [{ name: "a" }, { name: "b" }], commands: [{ name: "x" }, { name: "y" }] };
  const sidecar = parse(base);

  test("the limit: exactly that many, counted before and after the missing tools", () => {
    const described = parse({ ...base, version: "2", instructions: "new", tools: [{ name: "a", description: "d" }, { name: "c" }] });
    const all = allDifferences(sidecar, described);
    expect(all).toEqual([
      'the sidecar declares version="1.0.0", describe returned version="2"',
      'the sidecar declares instructions=null, describe returned instructions="new"',
      "tool 'b' is in the sidecar but describe did not return it",
      "tool 'c' was returned by describe but is not in the sidecar",
      'tool \'a\': the sidecar declares description="", describe returned description="d"',
    ]);
    for (let n = 1; n <= all.length; n++) expect(allDifferences(sidecar, described, undefined, n)).toEqual(all.slice(0, n));
    expect(firstDifference(sidecar, described)).toBe(all[0]!);
    expect(firstDifference(sidecar, sidecar)).toBeNull();
  });

  test("named sides", () => {
    expect(allDifferences(sidecar, parse({ ...base, version: "2" }), { expected: "the approved manifest", actual: "the new build" })).toEqual([
      'the approved manifest declares version="1.0.0", the new build returned version="2"',
    ]);
  });

  test("a command missing on either side is named, and the ones both have are compared; moved ones only when the sets are the same", () => {
    const fewer = parse({ ...base, commands: [{ name: "y" }] });
    expect(allDifferences(sidecar, fewer)).toEqual(["command 'x' is in the sidecar but describe did not return it"]);
    expect(allDifferences(fewer, sidecar)).toEqual(["command 'x' was returned by describe but is not in the sidecar"]);
    // the same length, one name swapped: z for x, and y has moved, but the sets differ
    const swapped = parse({ ...base, commands: [{ name: "y" }, { name: "z" }] });
    expect(allDifferences(sidecar, swapped)).toEqual(["command 'x' is in the sidecar but describe did not return it", "command 'z' was returned by describe but is not in the sidecar"]);
    const changed = parse({ ...base, commands: [{ name: "x", summary: "now" }, { name: "y" }] });
    expect(allDifferences(sidecar, changed)).toEqual([`command 'x' differs: the sidecar declares {"name":"x"}, describe returned {"name":"x","summary":"now"}`]);
    expect(allDifferences(sidecar, parse({ ...base, commands: [{ name: "x" }, { name: "y" }] }))).toEqual([]);
  });
});
