/** Each command's file owns its words: the top-level help lists the summary its own meta gives. */
import { expect, test } from "bun:test";
import { COMMANDS, HIDDEN } from "../../src/cli/_commands.ts";
import type { CommandMetaWithSummary } from "../../src/cli/_meta.ts";

test("every listed command's meta has its name, a description and a one-line summary", async () => {
  for (const [name, load] of Object.entries(COMMANDS)) {
    if (HIDDEN.has(name)) continue;
    const meta = (await load()).default.meta as CommandMetaWithSummary;
    expect([name, meta.name, typeof meta.description, typeof meta.summary]).toEqual([name, name, "string", "string"]);
    expect(meta.summary.length).toBeLessThanOrEqual(100);
  }
});
