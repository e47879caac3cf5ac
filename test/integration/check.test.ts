/**
 * `cxagent check` through its library entry, on real fixtures in real plugin hosts: each fixture
 * breaks one rule and fails the check named for it (and only that one of the checks it is run
 * through); a plugin that keeps every rule passes them all; every check has a fixture that fails it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type CheckReport, type CheckStatus } from "../../src/check/report.ts";
import { CHECKS, checkPlugin } from "../../src/check/run.ts";
import type { Session } from "../../src/session/session.ts";
import { alive, fixture, fixtureLibrary, hostsOf, openSession, refusal, ROOT, tempDir } from "../helpers.ts";

// Approvals made for the checks go to a state folder of this file's own.
const state = tempDir();
let session: Session;
beforeAll(async () => {
  session = await openSession({ stateDir: state.path });
});
afterAll(async () => {
  await session.close();
  state[Symbol.dispose]();
});

interface Case {
  fixture: string;
  /** The checks it is run through: the one it breaks, and what that one needs to have run. */
  only: string[];
  /** What it breaks; every other check in `only` passes (or skips, where named). */
  expect: Record<string, CheckStatus>;
  /** Words each named check's `seen` must hold. */
  seen?: Record<string, string[]>;
  /** The plugin hosts' environment: which breach a fixture of several makes. */
  env?: Record<string, string>;
}

const CASES: Case[] = [
  { fixture: "not-a-library", only: ["library"], expect: { library: "fail" }, seen: { library: ["is not a library this host can load", "ELF"] } },
  { fixture: "outside-rpath", only: ["library"], expect: { library: "fail" }, seen: { library: ["libgreeting.so", "outside the plugin's folder"] } },
  { fixture: "missing-three", only: ["exports", "handshake"], expect: { exports: "fail", handshake: "skip" }, seen: { exports: ["cxagent_plugin_invoke is missing", "cxagent_plugin_gate is missing", "cxagent_plugin_stop is missing"] } },
  { fixture: "exports-hidden", only: ["exports"], expect: { exports: "fail" }, seen: { exports: ["7 mandatory exports", "cxagent_plugin_describe is defined but not exported"] } },
  { fixture: "export-typo", only: ["exports"], expect: { exports: "warn" }, seen: { exports: ["cxagent_plugin_pol (did you mean cxagent_plugin_poll?)"] } },
  { fixture: "sidecar-invalid", only: ["sidecar", "describe"], expect: { sidecar: "fail", describe: "skip" }, seen: { sidecar: ["3 problems", "tools[1].gated", "'providers'"], describe: ["no plugin code was run"] } },
  {
    fixture: "schema-invalid", only: ["sidecar", "schemas"], expect: { sidecar: "fail", schemas: "fail" },
    seen: { schemas: ["properties.query.type", "properties.query.required", "properties.limit.maxLength", "properties.glob.pattern", "requird is not a JSON Schema keyword, so validators ignore it (did you mean required?)"] },
  },
  { fixture: "no-description", only: ["descriptions"], expect: { descriptions: "fail" }, seen: { descriptions: ["bare_tool, blank_tool"] } },
  { fixture: "generic-tool-names", only: ["names"], expect: { names: "warn" }, seen: { names: ["'search', 'definition'", "names other plugins will claim too"] } },
  { fixture: "claims-read-file", only: ["names"], expect: { names: "fail" }, seen: { names: ["'read_file' is a built-in tool's name"] } },
  { fixture: "handshake-99", only: ["handshake"], expect: { handshake: "fail" }, seen: { handshake: ["contract 99", "accepts contracts 2 to 4"] } },
  { fixture: "contract-mismatch", only: ["handshake"], expect: { handshake: "fail" }, seen: { handshake: ["pluginContract 3", "returned 4"] } },
  {
    fixture: "describe-differs-everywhere", only: ["describe"], expect: { describe: "fail" },
    seen: { describe: ["6 differences", 'version="2.0.0"', "spawns=true", "'differs_second' is in the sidecar", "'differs_third' was returned", 'description="the first tool, reworded"', "command 'hello' differs"] },
  },
  { fixture: "start-needs-settings", only: ["start", "results"], expect: { start: "fail", results: "skip" }, seen: { start: ["settings.endpoint is required"] } },
  { fixture: "invoke-replies", only: ["results"], expect: { results: "fail" }, seen: { results: ["null_pointer {}: cxagent_plugin_invoke returned NULL", "invalid JSON", "and "] } },
  { fixture: "no-output-content", only: ["results", "content"], expect: { content: "fail" }, seen: { content: ["output.content is missing"] } },
  { fixture: "crashes-on-bad-arguments", only: ["results", "bad-arguments"], expect: { "bad-arguments": "fail" }, seen: { "bad-arguments": ["without arguments: crashed (signal SIGSEGV)", "'text' = 12345 (the schema says string): crashed"] } },
  { fixture: "slow-gate", only: ["gate-speed"], expect: { "gate-speed": "fail" }, seen: { "gate-speed": ["slow_gate_delete took longer than the 500 ms deadline"] } },
  { fixture: "gate-returns-json-null", only: ["gate-answers"], expect: { "gate-answers": "fail" }, seen: { "gate-answers": ["returned the JSON text null"] } },
  { fixture: "racy-static-state", only: ["concurrency"], expect: { concurrency: "fail" }, seen: { concurrency: ["answered differently from the same calls made one at a time", "squared is"] } },
  { fixture: "commands-without-export", only: ["commands"], expect: { commands: "fail" }, seen: { commands: ["does not export cxagent_plugin_command"] } },
  { fixture: "crashes-on-bad-settings", only: ["bad-settings"], expect: { "bad-settings": "fail" }, seen: { "bad-settings": ['with settings ["not","an","object"], start crashed (signal SIGSEGV)'] } },
  { fixture: "stop-needs-start", only: ["stop"], expect: { stop: "fail" }, seen: { stop: ["stop without a start crashed (signal SIGSEGV)"] } },
  { fixture: "poller-not-client", only: ["poll"], expect: { poll: "fail" }, seen: { poll: ["does not say client: true"] } },
  {
    fixture: "reports-outside-calls", only: ["results", "gate-speed", "host-table"], expect: { "host-table": "fail" },
    seen: { "host-table": ["progress from cxagent_plugin_start outside any call", "progress from cxagent_plugin_gate outside any call", "stream from cxagent_plugin_invoke for a call that had already returned"] },
  },
  { fixture: "returns-string-literal", only: ["results", "ownership"], expect: { ownership: "fail" }, seen: { ownership: ["cxagent_plugin_invoke returned", "read-only data (a string literal?)", "from a literal"] } },
  { fixture: "returns-static-buffer", only: ["results", "ownership"], expect: { ownership: "fail" }, seen: { ownership: ["own writable data (a static buffer?)"] } },
  { fixture: "returns-stack-buffer", only: ["results", "ownership"], expect: { results: "fail", ownership: "fail" }, seen: { ownership: ["on the calling thread's stack (a local buffer?)"] } },
  { fixture: "free-does-nothing", only: ["results", "free"], expect: { free: "fail" }, seen: { free: ["cxagent_plugin_free did not release"] } },
  // A Cortex plugin's buffers (test/integration/check-cortex-buffers.test.ts has each breach against every buffer check).
  { fixture: "cortex-buffers", env: { CXAGENT_FX_BUFFERS: "len_over_cap" }, only: ["results", "buffer-cap"], expect: { results: "fail", "buffer-cap": "fail" }, seen: { "buffer-cap": ["whose len is larger than its cap"] } },
  { fixture: "cortex-buffers", env: { CXAGENT_FX_BUFFERS: "freed_again" }, only: ["results", "bad-arguments", "freed-once"], expect: { "bad-arguments": "fail", "freed-once": "fail" }, seen: { "freed-once": ["that buffer_free had already released"] } },
  { fixture: "cortex-buffers", env: { CXAGENT_FX_BUFFERS: "frees_input" }, only: ["results", "lent-buffers"], expect: { "lent-buffers": "fail" }, seen: { "lent-buffers": ["the host lent it (input_json)"] } },
  { fixture: "undeclared-spawner", only: ["start", "spawns"], expect: { spawns: "fail" }, seen: { spawns: ["spawns: false", "sleep, pid"] } },
  // Both: the child that called setsid, and the daemon whose parent exited (found because the check's host is its subreaper).
  // Its calls run under its sandbox: the read it did not declare is denied and named, with the line to add (by errno, traced; without strace, only that a call met EACCES).
  Bun.which("strace")
    ? { fixture: "reads-undeclared", only: ["start", "sandbox"], expect: { sandbox: "fail" }, seen: { sandbox: ["read of /etc/hostname was denied (EACCES)", '"sandbox": {"fs": {"read": ["/etc/hostname"]}} would allow it'] } }
    : { fixture: "reads-undeclared", only: ["start", "sandbox"], expect: { sandbox: "warn" }, seen: { sandbox: ["answered EACCES or EPERM", "install strace"] } },
  { fixture: "spawns-without-registering", only: ["start", "registers"], expect: { registers: "fail" }, seen: { registers: ["2 processes left the plugin host's process group and were never registered"] } },
];

const statuses = (report: CheckReport) => Object.fromEntries(report.checks.map((c) => [c.id, c.status]));

describe("each fixture fails the check named for its breach", () => {
  for (const c of CASES) {
    test(`${c.fixture}${c.env ? ` (${Object.values(c.env).join(" ")})` : ""}: ${Object.entries(c.expect).map(([id, s]) => `${id} ${s}`).join(", ")}`, async () => {
      const report = await checkPlugin(session, fixture(c.fixture), { only: c.only, ...(c.env ? { env: c.env } : {}) });
      const wanted = Object.fromEntries(c.only.map((id) => [id, c.expect[id] ?? "pass"]));
      expect({ fixture: c.fixture, statuses: statuses(report), checks: report.checks }).toMatchObject({ fixture: c.fixture, statuses: wanted });
      for (const [id, words] of Object.entries(c.seen ?? {})) {
        const seen = report.checks.find((x) => x.id === id)!.seen;
        for (const w of words) expect({ id, seen }).toEqual({ id, seen: expect.stringContaining(w) });
      }
      for (const check of report.checks) if (check.status === "fail" || check.status === "warn") expect(check.fix).toBeString();
      expect(report.ok).toBe(!Object.values(c.expect).includes("fail"));
      // What it started is gone, and no plugin host of it is left.
      for (const pid of report.ended) expect(alive(pid)).toBe(false);
      expect(hostsOf(fixtureLibrary(c.fixture))).toEqual([]);
    }, 30_000);
  }
});

test("every check has a fixture that fails it", () => {
  const broken = new Set(CASES.flatMap((c) => Object.entries(c.expect).filter(([, s]) => s === "fail" || s === "warn").map(([id]) => id)));
  expect(CHECKS.map((c) => c.id).filter((id) => !broken.has(id))).toEqual([]);
});

test("a plugin that keeps every rule passes every check, exercising each optional export", async () => {
  const report = await checkPlugin(session, fixture("passes-check"));
  expect(report.checks.map((c) => c.id)).toEqual(CHECKS.map((c) => c.id));
  // The gate's speed is the machine's too: on a loaded one it may only warn.
  // Skipped: only a Cortex plugin's buffer checks.
  const skipped = report.checks.filter((c) => c.status === "skip");
  expect(skipped.map((c) => [c.id, c.seen])).toEqual(["buffer-cap", "freed-once", "lent-buffers"].map((id) => [id, "does not apply to a native plugin"]));
  expect(report.checks.filter((c) => c.status !== "pass" && c.status !== "skip" && !(c.id === "gate-speed" && c.status === "warn"))).toEqual([]);
  expect(report).toMatchObject({ plugin: "passes-check", version: "1.0.0", kind: "native", ok: true, counts: { fail: 0, skip: 3 } });
  const seen = Object.fromEntries(report.checks.map((c) => [c.id, c.seen]));
  expect(seen["gate-answers"]).toMatch(/\d+ NULL \(no prompt\), [1-9]\d* asking with a display/);
  // one submit per plugin host; the check starts more than one, and on a loaded machine a host it
  // ends soon may live long enough to be polled too
  expect(seen.poll).toMatch(/: [1-9]\d* valid submits?$/);
  expect(seen.registers).toContain("each registered right away");
  expect(seen.ownership).toContain("cxagent_plugin_poll");
  expect(seen.free).toMatch(/released all \d+ strings/);
  // Its registered children were ended with their plugin hosts.
  expect(report.ended).toEqual([]);
}, 60_000);

test("a full run of a plugin with one breach fails that check alone", async () => {
  const report = await checkPlugin(session, fixture("free-does-nothing"));
  expect(report.checks.filter((c) => c.status !== "pass" && c.status !== "skip").map((c) => [c.id, c.status])).toEqual([["free", "fail"]]);
  expect(report.ok).toBe(false);
}, 60_000);

test("no plugin code runs before trust: unapproved and nobody to ask is refused, and the library was never mapped", async () => {
  using dir = tempDir();
  const marker = join(dir.path, "marker");
  await using strict = await openSession({ stateDir: join(dir.path, "state"), confirmTrust: null, env: { CXAGENT_FX_MARKER: marker } });
  const error = await refusal(checkPlugin(strict, fixture("ctor-marker")));
  expect(error.code).toBe("E_NOT_APPROVED");
  expect(existsSync(marker)).toBe(false);
  // A person who says no is a refusal too.
  const denied = await refusal(checkPlugin(strict, fixture("ctor-marker"), { confirmTrust: () => false }));
  expect(denied.code).toBe("E_DENIED");
  expect(existsSync(marker)).toBe(false);
  // Checks that read only files need no approval.
  const report = await checkPlugin(strict, fixture("ctor-marker"), { only: ["exports", "sidecar"] });
  expect(statuses(report)).toEqual({ exports: "pass", sidecar: "pass" });
  expect(existsSync(marker)).toBe(false);
});

test("checks apply by kind: a Cortex plugin runs every check that applies to it (its handshake and describe its own; issue 43)", async () => {
  const report = await checkPlugin(session, fixture("cortex-basic"), { callTimeoutMs: 5000 });
  expect(report).toMatchObject({ kind: "cortex", counts: { fail: 0 } });
  const byId = Object.fromEntries(report.checks.map((c) => [c.id, c]));
  expect(byId.library!.status).toBe("pass");
  expect(byId.exports).toMatchObject({ status: "skip", seen: "does not apply to a cortex plugin" });
  expect(byId.handshake).toMatchObject({ status: "pass", seen: expect.stringContaining("cortex_plugin_init returned 0 with ABI 1") });
  expect(byId.describe).toMatchObject({ status: "warn", seen: expect.stringContaining("are single words, with no prefix of the plugin's own") });
  for (const id of ["start", "content", "concurrency", "bad-settings", "stop"]) expect({ id, status: byId[id]!.status }).toEqual({ id, status: "pass" });
  // is_error results and arguments it takes without complaint are warnings, not failures
  expect(byId.results!.status).toBe("warn");
}, 60_000);

test("a TypeScript module plugin runs every check that applies to it, and passes them", async () => {
  const report = await checkPlugin(session, join(ROOT, "examples/calculator-ts"));
  expect(report).toMatchObject({ plugin: "calculator-ts", kind: "module", ok: true, counts: { fail: 0 } });
  // Skipped: only what a module has no part of (a library's symbols, handshake, host table, C strings).
  const skipped = report.checks.filter((c) => c.status === "skip");
  expect(skipped.map((c) => c.id)).toEqual(["library", "exports", "handshake", "host-table", "ownership", "free", "buffer-cap", "freed-once", "lent-buffers"]);
  for (const c of skipped) expect(c.seen).toBe("does not apply to a module plugin");
  expect(report.checks.filter((c) => c.status !== "skip" && c.status !== "pass" && !(c.id === "gate-speed" && c.status === "warn"))).toEqual([]);
  const seen = Object.fromEntries(report.checks.map((c) => [c.id, c.seen]));
  expect(seen.results).toContain("9 calls to 3 tools");
  expect(seen.concurrency).toContain("answered as the same calls made one at a time");
}, 60_000);

test("a module plugin that breaks a rule fails that check", async () => {
  const folder = join(ROOT, "test/fixtures/modules/faulty-module");
  const report = await checkPlugin(session, folder, { only: ["start", "results"], env: { CXAGENT_FX_FAULT: "invoke:wrong_type" } });
  expect(statuses(report)).toEqual({ start: "pass", results: "fail" });
  expect(report.checks.find((c) => c.id === "results")!.fix).toBeString();
  expect(report.ok).toBe(false);
}, 60_000);

test("an unknown check id is refused, naming the checks there are", async () => {
  const error = await refusal(checkPlugin(session, fixture("echo"), { only: ["exports", "speling"] }));
  expect(error.code).toBe("E_INVALID_INPUT");
  expect(error.message).toBe("cxagent check has no check named 'speling'");
  expect(error.hint).toContain("exports, sidecar");
});
