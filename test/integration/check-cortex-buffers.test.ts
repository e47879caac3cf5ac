/**
 * `cxagent check` judges a Cortex native plugin's buffers (issue 43 point 3): each returned
 * buffer freed exactly once through the plugin's own buffer_free, with its cap intact. Each rule
 * has a way of test/fixtures/cortex/cortex-buffers.c (CXAGENT_FX_BUFFERS) that breaks it alone;
 * the same plugin keeping every rule, and cortex-basic, pass them all.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { CheckStatus } from "../../src/check/report.ts";
import { checkPlugin } from "../../src/check/run.ts";
import type { Session } from "../../src/session/session.ts";
import { fixture, openSession, tempDir } from "../helpers.ts";

const state = tempDir();
let session: Session;
beforeAll(async () => {
  session = await openSession({ stateDir: state.path });
});
afterAll(async () => {
  await session.close();
  state[Symbol.dispose]();
});

const BUFFER_CHECKS = ["ownership", "free", "buffer-cap", "freed-once", "lent-buffers"];

async function run(ref: string, breach: string | null) {
  const report = await checkPlugin(session, ref, { only: ["results", "bad-arguments", ...BUFFER_CHECKS], env: breach ? { CXAGENT_FX_BUFFERS: breach } : {}, callTimeoutMs: 5000 });
  return Object.fromEntries(report.checks.map((c) => [c.id, { status: c.status, seen: c.seen, fix: c.fix }])) as Record<string, { status: CheckStatus; seen: string; fix: string | null }>;
}

test.each([
  ["leak", "free", ["buffer_free did not release", "buffers it was given", "e.g. from plugin_info"]],
  ["static", "ownership", ["tool_execute returned 2 buffers in the library's own writable data (a static buffer?)", "the host frees every buffer it is given, so each must be one your buffer_free can release"]],
  ["len_over_cap", "buffer-cap", ["tool_execute returned 2 buffers whose len is larger than its cap, e.g. len 45, cap 44: \"{\\\"output\\\":\\\"done\\\","]],
  ["freed_again", "freed-once", ["tool_execute returned", "that buffer_free had already released", "would be freed twice"]],
  ["frees_input", "lent-buffers", ["tool_execute freed (or wrote into) 2 buffers the host lent it (input_json) over 2 calls"]],
])("%s fails %s, and no other buffer check", async (breach, check, says) => {
  const r = await run(fixture("cortex-buffers"), breach);
  for (const id of BUFFER_CHECKS) expect({ id, status: r[id]!.status }).toEqual({ id, status: id === check ? "fail" : "pass" });
  for (const w of says) expect(r[check]!.seen).toContain(w);
  expect(r[check]!.fix).toBeString();
}, 60_000);

test("a Cortex plugin that keeps every rule passes every buffer check", async () => {
  for (const ref of [fixture("cortex-buffers"), fixture("cortex-basic")]) {
    const r = await run(ref, null);
    for (const id of BUFFER_CHECKS) expect({ ref, id, status: r[id]!.status }).toEqual({ ref, id, status: "pass" });
    expect(r.free!.seen).toMatch(/^buffer_free released all \d+ buffers/);
    expect(r["lent-buffers"]!.seen).toContain("tool_execute freed none of the buffers lent to its");
  }
}, 60_000);
