/**
 * README's paragraph on `npm run guards` states how many guards there are, in how many areas, and
 * how many in each: written by hand, so it is checked against scripts/guards.list.ts here (four
 * engineers adding guards at once left it three off). Every guard's text must also occur exactly
 * once in its file, or `npm run guards` stops before it checks anything.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GUARDS } from "../../scripts/guards.list.ts";
import { ROOT } from "../helpers.ts";

const readme = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
const WORDS: Record<string, string> = { trust: "trust", text: "text", gating: "gating", selection: "tool selection", reaping: "reaping", isolation: "isolation", protocol: "the protocol", state: "`config set` and the result store", mcp: "`cxagent mcp`", secrets: "secrets" };
const NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

test("README states the guard list's total, its number of areas and each area's count", () => {
  const counts = new Map<string, number>();
  for (const g of GUARDS) counts.set(g.area, (counts.get(g.area) ?? 0) + 1);
  expect(readme).toContain(`${GUARDS.length} guards in ${NUMBERS[counts.size]} areas`);
  expect(readme).toContain(`\`${GUARDS.length} guards: ${GUARDS.length} caught, 0 survived`);
  for (const [area, n] of counts) {
    const words = WORDS[area];
    expect({ area, known: words !== undefined }).toEqual({ area, known: true });
    expect({ area, said: readme.includes(`${words} (${n}`) }).toEqual({ area, said: true });
  }
});

test("every guard's text occurs exactly once in its file", () => {
  const wrong = GUARDS.map((g) => ({ id: g.id, file: g.file, times: readFileSync(join(ROOT, g.file), "utf8").split(g.find).length - 1 })).filter((g) => g.times !== 1);
  expect(wrong).toEqual([]);
});
