import { expect, test } from "bun:test";
import { firstDifference } from "../../src/session/compare.ts";
import { checkManifest, type Manifest } from "../../src/protocol/manifest.ts";

const base = {
  pluginContract: 4,
  name: "calc",
  version: "1.0.0",
  tools: [{ name: "calc_add", gated: true, inputSchema: { type: "object", properties: { a: { type: "number" } } } }],
};

function parse(input: unknown): Manifest {
  const checked = checkManifest(input);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return checked.manifest;
}

test("defaults fill what a manifest leaves out", () => {
  expect(parse(base)).toEqual({
    ...base,
    instructions: null,
    spawns: false,
    client: false,
    commands: [],
    tools: [{ ...base.tools[0]!, description: "", alwaysAskable: true }],
  });
});

test("every problem is reported with its path, unknown keys by name", () => {
  const checked = checkManifest({ ...base, completions: [], tools: [{ name: "bad name", gated: "sometimes", colour: 1 }, { name: "calc_add" }, { name: "calc_add" }] });
  expect(checked.ok).toBe(false);
  if (checked.ok) return;
  expect(checked.problems.map((p) => p.message).sort()).toEqual([
    "manifest declares 'completions', which this build does not service",
    "tools[0] declares 'colour', which this build does not service (tool 'bad name')",
    `tools[0].gated: must be true, false or "dynamic", not the string "sometimes" (tool 'bad name')`,
    `tools[0].name: the string "bad name" is not a tool name (1-64 of A-Z a-z 0-9 _ -) (tool 'bad name')`,
  ]);
});

test("duplicate tool names are refused", () => {
  const checked = checkManifest({ ...base, tools: [{ name: "a" }, { name: "a" }] });
  expect(checked.ok ? [] : checked.problems.map((p) => p.message)).toEqual(["tools[1]: tool 'a' is declared more than once (tool 'a')"]);
});

test("a contract out of range names both the value and the range", () => {
  const checked = checkManifest({ ...base, pluginContract: 5 });
  expect(checked.ok ? [] : checked.problems.map((p) => p.message)).toEqual([
    "pluginContract: contract 5 is outside the range this host accepts (2..4)",
  ]);
});

test("sidecar and describe: structural equality, first difference named", () => {
  const sidecar = parse(base);
  const reordered = parse({ ...base, tools: [{ inputSchema: { properties: { a: { type: "number" } }, type: "object" }, gated: true, name: "calc_add" }] });
  expect(firstDifference(sidecar, reordered)).toBeNull();
  expect(firstDifference(sidecar, parse({ ...base, tools: [{ ...base.tools[0]!, gated: false }] }))).toBe(
    "tool 'calc_add': the sidecar declares gated=true, describe returned gated=false",
  );
  expect(firstDifference(sidecar, parse({ ...base, version: "1.0.1" }))).toBe(
    'the sidecar declares version="1.0.0", describe returned version="1.0.1"',
  );
  expect(firstDifference(sidecar, parse({ ...base, tools: [...base.tools, { name: "calc_sub" }] }))).toBe(
    "tool 'calc_sub' was returned by describe but is not in the sidecar",
  );
});
