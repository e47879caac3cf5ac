/**
 * How the benchmark turns one section's rounds into figures (scripts/bench/measure.ts
 * sectionFigures), how a "no worse than spin off" target reads them (targets.ts), and how the
 * contended variant takes turns between builds measured together (measure.ts alternating).
 */
import { expect, test } from "bun:test";
import { alternating, sectionFigures } from "../../scripts/bench/measure.ts";
import { TARGETS } from "../../scripts/bench/targets.ts";

// Three rounds; the machine was twice as fast in the last one, for both builds alike.
const samples = new Map<string, number[]>([
  ["seq.cxagent.mean_us", [20, 22, 10]],
  ["seq.cxagent-spin0.mean_us", [21, 23, 9]],
  ["plugins.32.cxagent.calls_s", [100, 90, 200]],
  ["plugins.32.cxagent-spin0.calls_s", [99, 100, 190]],
  ["seq.c.mean_us", [5, 6, 7]],
]);

test("each key's figure is its median over the rounds", () => {
  const fig: Record<string, number> = {};
  sectionFigures(samples, fig, "contended.");
  expect(fig["contended.seq.cxagent.mean_us"]).toBe(20);
  expect(fig["contended.seq.cxagent-spin0.mean_us"]).toBe(21);
  expect(fig["contended.seq.c.mean_us"]).toBe(6);
});

test("a build and its spin-off twin also get the median of their ratio within each round", () => {
  const fig: Record<string, number> = {};
  sectionFigures(samples, fig);
  // Rounds: 20/21, 22/23, 10/9: the median is 22/23, not the ratio of the medians (20/21).
  expect(fig["seq.cxagent/spin0.mean_us"]).toBeCloseTo(22 / 23, 12);
  expect(fig["plugins.32.cxagent/spin0.calls_s"]).toBeCloseTo(100 / 99, 12);
  expect(Object.keys(fig).filter((k) => k.includes("/"))).toEqual(["seq.cxagent/spin0.mean_us", "plugins.32.cxagent/spin0.calls_s"]);
});

test("rounds that do not pair up (a contender missing from one) give no paired figure", () => {
  const fig: Record<string, number> = {};
  sectionFigures(new Map([["seq.cxagent.mean_us", [20, 22]], ["seq.cxagent-spin0.mean_us", [21]]]), fig);
  expect(fig["seq.cxagent/spin0.mean_us"]).toBeUndefined();
});

test("the no-worse targets read the paired figure, and the ratio of medians only without it", () => {
  const seq = TARGETS.find((t) => t.text.startsWith("sequential mean: no worse than spin off"))!;
  const busy = TARGETS.find((t) => t.text.startsWith("32 plugins busy, aggregate calls/s: no worse"))!;
  const fig: Record<string, number> = {};
  sectionFigures(samples, fig);
  expect(seq.ratio(fig)).toBeCloseTo(23 / 22, 12); // lower is better: spin off ÷ as built
  expect(busy.ratio(fig)).toBeCloseTo(100 / 99, 12);
  const older = { "seq.cxagent.mean_us": 20, "seq.cxagent-spin0.mean_us": 21 };
  expect(seq.ratio(older)).toBeCloseTo(21 / 20, 12);
});

test("builds measured together take turns, the first going first in every other turn, until each made its share", async () => {
  const turns: string[] = [];
  const part = (name: string) => ({ pids: [], turn: async (n: number) => void turns.push(`${name}${n}`) });
  const done = await alternating([part("a"), part("b")], 10, 3);
  expect(turns).toEqual(["a3", "b3", "b3", "a3", "a3", "b3", "b1", "a1"]);
  expect(done).toHaveLength(2);
  for (const d of done) expect(d.hostCpuUs).toBe(0); // no processes named: nothing counted
});
