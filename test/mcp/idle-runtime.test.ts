/**
 * `cxagent mcp` starts itself again, once, with the runtime settings under which an idle Bun does
 * no work (cli/_idle-runtime.ts): the same process (pid, the client's pipes), now with them (its
 * --verbose note says so: its /proc environ is blanked by nondumpable.ts); CXAGENT_IDLE_RUNTIME=0
 * turns it off. Whether the settings quiet it is measured by `npm run bench` (mcp-lazy's idle CPU).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RUNTIME_ENV } from "../../src/cli/_idle-runtime.ts";
import { CALCULATOR } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

let home = "";
let state = "";
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cxagent-mcp-idle-"));
  state = await approvedState(home, [CALCULATOR]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("the server restarts itself once with the idle settings, on the pid its client started, and serves", async () => {
  expect(RUNTIME_ENV).toEqual({ BUN_GC_TIMER_DISABLE: "1", BUN_JSC_useWarmUpMarkedBlocks: "0" }); // Bun 1.4
  await using server = await connect([CALCULATOR, "--verbose"], { state, cwd: home });
  expect((await server.client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } })).content).toEqual([{ type: "text", text: "6 * 7 = 42" }]);
  const notes = server.stderr().split("\n").filter((l) => l.includes("restarted itself"));
  expect(notes).toHaveLength(1);
  expect(notes[0]).toContain(`pid ${server.pid} restarted itself with BUN_GC_TIMER_DISABLE=1 and BUN_JSC_useWarmUpMarkedBlocks=0,`);
}, 30_000);

test("CXAGENT_IDLE_RUNTIME=0: served as started", async () => {
  await using server = await connect([CALCULATOR, "--verbose"], { state, cwd: home, env: { CXAGENT_IDLE_RUNTIME: "0" } });
  await server.client.listTools();
  expect(server.stderr()).toContain("serving over stdio");
  expect(server.stderr()).not.toContain("restarted itself");
}, 30_000);
