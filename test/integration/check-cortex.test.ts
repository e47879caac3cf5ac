/**
 * `cxagent check` runs a Cortex native plugin (issue 43 point 3): its load, what it describes, and
 * its calls, each check with a way of the project's Cortex fixture (test/fixtures/cortex/
 * cortex-basic.c, its CXAGENT_FX_CORTEX and CXAGENT_FX_FAULT) that fails it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckStatus } from "../../src/check/report.ts";
import { checkPlugin } from "../../src/check/run.ts";
import type { Session } from "../../src/session/session.ts";
import { fixture, fixtureLibrary, openSession, tempDir } from "../helpers.ts";

const state = tempDir();
let session: Session;
beforeAll(async () => {
  session = await openSession({ stateDir: state.path });
});
afterAll(async () => {
  await session.close();
  state[Symbol.dispose]();
});

const BASIC = fixture("cortex-basic");

async function statuses(ref: string, only: string[], env: Record<string, string> = {}, callTimeoutMs = 5000) {
  const report = await checkPlugin(session, ref, { only, env, callTimeoutMs });
  return Object.fromEntries(report.checks.map((c) => [c.id, { status: c.status, seen: c.seen }])) as Record<string, { status: CheckStatus; seen: string }>;
}

test("a Cortex plugin that loads: handshake passes, and its tools are the ones it described", async () => {
  const r = await statuses(BASIC, ["handshake", "describe", "content"]);
  expect(r["handshake"]).toEqual({ status: "pass", seen: "cortex_plugin_init returned 0 with ABI 1 and a complete table; plugin_info and 12 descriptors (tool_count 12) are valid" });
  // its descriptors are valid; its short tool names are what it is warned about
  expect(r.describe!.status).toBe("warn");
  expect(r.describe!.seen).toContain("are single words, with no prefix of the plugin's own");
  expect(r.content!.status).toBe("pass");
});

test.each([
  ["status:-1", "cortex_plugin_init returned -1"],
  ["status:-2", "cortex_plugin_init returned -2"],
  ["abi:2", "abi_version 2"],
  ["null:tool_execute", "tool_execute"],
  ["count:huge", "tool_count"],
  ["descriptor:1:invalid", "tool_descriptor(1)"],
  ["descriptor:0:bad_confirmation", "confirmation"],
  ["info:not_json", "plugin_info is invalid"],
  ["tool:two words", "two words"],
  ["duplicate", "more than once"],
])("handshake fails a plugin whose load is wrong: %s", async (spec, says) => {
  const r = await statuses(BASIC, ["handshake", "describe", "results"], { CXAGENT_FX_CORTEX: spec });
  expect(r["handshake"]!.status).toBe("fail");
  expect(r["handshake"]!.seen).toContain(says);
  expect(r.describe!.status).toBe("skip");
  expect(r.results!.status).toBe("skip");
  expect(r.results!.seen).toContain("see handshake");
});

test.each([
  ["descriptor:2:bad_schema", "tool 'fail': "],
  ["descriptor:0:no_description", "1 tool without a description: echo"],
])("describe fails a descriptor the plugin loads with but a model cannot use: %s", async (spec, says) => {
  const r = await statuses(BASIC, ["handshake", "describe"], { CXAGENT_FX_CORTEX: spec });
  expect(r.handshake!.status).toBe("pass");
  expect(r.describe!.status).toBe("fail");
  expect(r.describe!.seen).toContain(says);
});

test.each([
  ["execute:invalid_json", "results", "fail", "work {}"],
  ["execute:empty", "results", "fail", "work {}"],
  ["execute:segfault", "results", "fail", "crashed (signal SIGSEGV)"],
  ["execute:bad_utf8", "results", "fail", "work {}: its answer holds U+FFFD, which the plugin host puts where bytes are not UTF-8"],
  ["execute:hang", "results", "fail", "did not answer within"],
])("the calls checks fail a tool_execute that answers wrongly: %s", async (fault, check, status, says) => {
  const r = await statuses(BASIC, ["handshake", check], { CXAGENT_FX_FAULT: fault }, 1500);
  expect(r["handshake"]!.status).toBe("pass");
  expect(r[check]!.status).toBe(status as CheckStatus);
  expect(r[check]!.seen).toContain(says);
}, 30_000);

test("an is_error result is reported by results; a plugin_info name other than its manifest.toml's, by descriptors", async () => {
  using dir = tempDir();
  const folder = join(dir.path, "pkg");
  mkdirSync(folder);
  copyFileSync(fixtureLibrary("cortex-basic"), join(folder, "cortex-basic.so"));
  writeFileSync(join(folder, "manifest.toml"), 'name = "quick-start"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\n');
  const r = await statuses(folder, ["handshake", "describe", "results"]);
  expect(r.describe!.status).toBe("warn");
  expect(r.describe!.seen).toContain(`plugin_info names it 'cortex-basic', but its manifest ${join(folder, "manifest.toml")} names it 'quick-start': cxagent uses the manifest's name`);
  expect(r.results!.status).toBe("warn");
  expect(r.results!.seen).toContain("fail {} reported success:false: it failed on purpose");
}, 30_000);

test("concurrency fails a Cortex plugin whose calls at once answer otherwise than alone (a static scratch buffer, unlocked)", async () => {
  const r = await statuses(fixture("cortex-buffers"), ["handshake", "results", "concurrency"], { CXAGENT_FX_BUFFERS: "racy" });
  expect(r.handshake!.status).toBe("pass");
  expect(r.results!.status).toBe("pass");
  expect(r.concurrency!.status).toBe("fail");
  expect(r.concurrency!.seen).toContain("answered differently from the same calls made one at a time");
  expect(r.concurrency!.seen).toContain("squared is");
}, 60_000);
