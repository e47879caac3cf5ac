/**
 * Issue 41: a result store that cannot be written (here `<state>/results` is a file) never turns an
 * over-cap result into an empty one. Spilled while it was read or capped after it was parsed, the
 * call fails with E_STATE naming the folder; a result within the cap is answered as usual.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fixture, openSession, refusal, tempDir, within } from "../helpers.ts";

test("with <state>/results a file: an over-cap answer of 3 MiB (spilled while read) or 5 KB (read whole) is E_STATE naming the folder; one within the cap is answered", async () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "results"), "not a folder");
  await using session = await openSession({ stateDir: dir.path });
  const plugin = await session.load(fixture("big-reply"));
  for (const bytes of [3 << 20, 5000]) {
    const error = await refusal(within(plugin.invoke("big_reply", { bytes }, { maxOutputBytes: 1024 }), 30_000, "the call"));
    expect(error.code).toBe("E_STATE");
    expect(error.message).toStartWith(`cannot store a result in ${join(dir.path, "results")}: `);
    expect(error.hint).toContain("a folder cxagent can write");
  }
  const small = await within(plugin.invoke("big_reply", { bytes: 1000, tag: 2 }, { maxOutputBytes: 1024 }), 30_000, "the small call");
  expect((small.output.content as string).length).toBe(1000);
  expect(small.spilled).toBeUndefined();
}, 60_000);
