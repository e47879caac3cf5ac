/**
 * A plugin host's settings are one value: the table of defaults (protocol/host-settings.ts), which
 * the session settles once and the plugin host reads its own defaults from.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readHostArgv } from "../../src/protocol/host-args.ts";
import { HOST_DEFAULTS, settleHostSettings } from "../../src/protocol/host-settings.ts";

test("settling takes each setting given and the table's default for the rest", () => {
  expect(settleHostSettings({})).toEqual({
    poolCap: null,
    pollMs: HOST_DEFAULTS.pollMs,
    spinUs: null,
    startupMs: HOST_DEFAULTS.startupMs,
    startMs: HOST_DEFAULTS.startMs,
    stopMs: HOST_DEFAULTS.stopMs,
    stuckMs: HOST_DEFAULTS.stuckMs,
    env: {},
    sessionId: null,
    source: "library",
    snapshotDir: null,
    workerFolders: [],
  });
  const given = { poolCap: 4, pollMs: 5, spinUs: 0, startupMs: 6, startMs: 7, stopMs: 8, stuckMs: 9, env: { A: "1" }, sessionId: "s", source: "mcp" as const, snapshotDir: "/run/x", workerFolders: ["/w"] };
  expect(settleHostSettings(given)).toEqual(given);
  expect(settleHostSettings({ startMs: undefined }).startMs).toBe(HOST_DEFAULTS.startMs);
});

test("who calls reaches the host's command line, which refuses a source it does not know", () => {
  expect(readHostArgv(["/p/x.so", "--source", "mcp"])).toMatchObject({ source: "mcp" });
  expect(readHostArgv(["/p/x.so"])).not.toHaveProperty("source");
  expect(readHostArgv(["/p/x.so", "--source", "telegram"])).toEqual({ error: "--source takes cli, library, mcp, not 'telegram'" });
});

test("the plugin host's defaults are the table's, not numbers of its own", () => {
  expect(readHostArgv(["/p/x.so"])).toMatchObject({ poolCap: HOST_DEFAULTS.poolCap, pollMs: HOST_DEFAULTS.pollMs, spinUs: null });
  const main = readFileSync(join(import.meta.dir, "../../src/plugin-host/main.ts"), "utf8");
  expect(main).toContain("?? HOST_DEFAULTS.poolCap");
  expect(main).toContain("?? HOST_DEFAULTS.pollMs");
  expect(main).toContain("?? HOST_DEFAULTS.spinUs");
});
