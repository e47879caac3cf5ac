/**
 * A secret's command binding that never finishes (issue 40): after COMMAND_MS (10 s) it is killed
 * and the binding fails, naming the command and the wait. Apart from test/unit/secret-resolve.test.ts
 * because it waits the 10 s: scripts/mutants.table.ts leaves it out (10 s a mutant).
 */
import { expect, test } from "bun:test";
import { COMMAND_MS, resolveBinding } from "../../src/secrets/resolve.ts";

test("a command that does not finish within 10 s is killed, and the binding fails saying so", async () => {
  const began = performance.now();
  const got = await resolveBinding({ command: ["sleep", "60"] });
  const ms = performance.now() - began;
  expect(got).toEqual({ ok: false, message: `command sleep 60 failed: it did not finish within ${COMMAND_MS / 1000} s` });
  expect(ms).toBeGreaterThanOrEqual(COMMAND_MS - 50);
  expect(ms).toBeLessThan(COMMAND_MS + 20_000);
}, 40_000);
