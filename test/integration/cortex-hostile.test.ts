/**
 * Hostile Cortex buffers and tables (issue 36, point 5): every field of a CortexBuffer a table
 * function returns (ptr, len, cap, the bytes), and the table's tool_count, descriptor indices and
 * buffer_free, each lying one way at a time (test/fixtures/cortex/cortex-hostile.c). Each must end
 * as a refused load or a failed call, named — or, where the bytes are only replaced, a call whose
 * text says so — never a crash of this process (the parent: these tests run in it) and never a
 * wait past the plugin's deadline. Every buffer the plugin returned is given back to its
 * buffer_free exactly once, whatever it held, unless the plugin host crashed on it.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { fixture, freeCounts, openSession, tempDir } from "../helpers.ts";

const HOSTILE = fixture("cortex-hostile");
/** How long any case may take, all of it (load, call, unload): under the 10 s startup deadline. */
const CASE_MS = 8_000;

type Outcome = { load: string; says: string } | { call: string; says: string } | { content: string };

const PLUGIN = "plugin 'cortex-hostile'";
const refusedAt = (what: string, why: string): Outcome => ({ load: "E_HANDSHAKE", says: `${PLUGIN} was refused: handshake refused: ${what} ${why}` });
const badReply = (why: string): Outcome => ({ call: "E_BAD_REPLY", says: `${PLUGIN}: tool_execute returned ${why}` });
const crashed = (during: string): Outcome => ({ load: "E_CRASHED", says: `${PLUGIN} crashed (signal SIGSEGV) ${during}` });

/** Every lie about a returned buffer, and what it must come to for plugin_info, tool_descriptor(0) and tool_execute. */
const BUFFERS: [string, Outcome, Outcome, Outcome][] = [
  ["null_ptr", refusedAt("plugin_info", "returned a buffer whose ptr is NULL but whose len is not 0"), refusedAt("tool_descriptor(0)", "returned a buffer whose ptr is NULL but whose len is not 0"), badReply("a buffer whose ptr is NULL but whose len is not 0, not a ToolResult")],
  ["len_over_cap", refusedAt("plugin_info", "returned a buffer whose len is larger than its cap"), refusedAt("tool_descriptor(0)", "returned a buffer whose len is larger than its cap"), badReply("a buffer whose len is larger than its cap, not a ToolResult")],
  ["cap_zero", refusedAt("plugin_info", "returned a buffer whose len is larger than its cap"), refusedAt("tool_descriptor(0)", "returned a buffer whose len is larger than its cap"), badReply("a buffer whose len is larger than its cap, not a ToolResult")],
  ["len_max", refusedAt("plugin_info", "returned a buffer larger than the line cap allows"), refusedAt("tool_descriptor(0)", "returned a buffer larger than the line cap allows"), badReply("a buffer larger than the line cap allows, not a ToolResult")],
  ["huge", refusedAt("plugin_info", "returned a buffer larger than the line cap allows"), refusedAt("tool_descriptor(0)", "returned a buffer larger than the line cap allows"), badReply("a buffer larger than the line cap allows, not a ToolResult")],
  ["big", refusedAt("plugin_info", 'is invalid:\n  - it is the string "aaaa'), refusedAt("tool_descriptor(0)", 'is invalid:\n  - it is the string "aaaa'), badReply('a string where a ToolResult object belongs: "aaaa')],
  ["wild_ptr", crashed("during plugin_info"), crashed("during tool_descriptor"), { call: "E_CRASHED", says: `${PLUGIN} crashed (signal SIGSEGV) while tool_execute of work was running` }],
  ["non_utf8", refusedAt("plugin_info", "returned bytes that are not UTF-8"), refusedAt("tool_descriptor(0)", "returned bytes that are not UTF-8"), badReply('a ToolResult without "output"')],
  // bytes that are not UTF-8 inside the output string: replaced by U+FFFD, as cortex.test.ts pins
  ["non_utf8_value", refusedAt("plugin_info", "returned bytes that are not UTF-8"), refusedAt("tool_descriptor(0)", "returned bytes that are not UTF-8"), { content: "bad \ufffd\ufffd bytes" }],
  ["nul_inside", refusedAt("plugin_info", "is invalid:\n  - it is not valid JSON"), refusedAt("tool_descriptor(0)", "is invalid:\n  - it is not valid JSON"), badReply("invalid JSON (a missing ',' or '}' at byte 18)")],
  ["not_json", refusedAt("plugin_info", "is invalid:\n  - it is not valid JSON"), refusedAt("tool_descriptor(0)", "is invalid:\n  - it is not valid JSON"), badReply("invalid JSON (an unexpected character at byte 0)")],
  ["nested", refusedAt("plugin_info", "is invalid:\n  - it is not valid JSON"), refusedAt("tool_descriptor(0)", "is invalid:\n  - it is not valid JSON"), badReply("invalid JSON (nesting deeper than 512 levels at byte 512)")],
  ["deep_valid", refusedAt("plugin_info", "is invalid:\n  - it is an array, not a JSON object"), refusedAt("tool_descriptor(0)", "is invalid:\n  - it is an array, not a JSON object"), badReply("invalid JSON (nesting deeper than 512 levels at byte 512)")],
  ["array", refusedAt("plugin_info", "is invalid:\n  - it is an array, not a JSON object"), refusedAt("tool_descriptor(0)", "is invalid:\n  - it is an array, not a JSON object"), badReply("an array where a ToolResult object belongs")],
  // a lone surrogate escaped in valid JSON is carried as it is, as JSON.parse would
  ["lone_surrogate", { content: "worked" }, refusedAt("tool_descriptor(0)", "is invalid:\n  - input_schema is required"), { content: "\ud800 lone" }],
];

/** The table's own lies. */
const TABLE: [string, Outcome][] = [
  ["count:4294967296", refusedAt("tool_count", "returned 4294967296, more than the 4096 tools this host reads")],
  ["count:18446744073709551615", refusedAt("tool_count", "returned 18446744073709551615, more than the 4096 tools this host reads")],
  ["count:4097", refusedAt("tool_count", "returned 4097, more than the 4096 tools this host reads")],
  ["count:0", { call: "E_UNKNOWN_TOOL", says: `${PLUGIN} has no tool 'work'` }],
  // 4096 tools, the most read, each valid: it loads (its tools are work0 … work4095)
  ["many:4096:100", { call: "E_UNKNOWN_TOOL", says: `${PLUGIN} has no tool 'work'` }],
  // each descriptor fits a line, their sum does not: refused at once, not left to the startup deadline
  ["many:4:17000000", { load: "E_MANIFEST", says: `${PLUGIN} was refused: the manifest made from plugin_info and the 4 tool descriptors is 68000641 bytes on the startup line, more than one protocol line holds (67108864 bytes)` }],
  ["past_end:empty", refusedAt("tool_descriptor(1)", "returned an empty buffer")],
  ["past_end:wild", crashed("during tool_descriptor")],
  ["table:free_wild", crashed("during plugin_info")],
];

async function run(setting: string): Promise<{ outcome: Outcome; ms: number; counts: ReturnType<typeof freeCounts> | null }> {
  using dir = tempDir();
  const log = join(dir.path, "free.log");
  const started = performance.now();
  let outcome: Outcome;
  await using session = await openSession({ env: { CXAGENT_FX_CORTEX: setting, CXAGENT_FX_FREE_LOG: log } });
  try {
    const plugin = await session.load(HOSTILE);
    try {
      const result = await plugin.invoke("work", {}, { timeoutMs: CASE_MS });
      outcome = { content: (result.output as { content: string }).content };
    } catch (error) {
      if (!(error instanceof CxError)) throw error;
      outcome = { call: error.code, says: error.message };
    }
  } catch (error) {
    if (!(error instanceof CxError)) throw error;
    outcome = { load: error.code, says: error.message };
  }
  await session.close();
  return { outcome, ms: performance.now() - started, counts: existsSync(log) ? freeCounts(log) : null };
}

function expectOutcome(got: Outcome, want: Outcome) {
  if ("content" in want) return expect(got).toEqual(want);
  const [kind, code] = "load" in want ? ["load", want.load] : ["call", want.call];
  const says = (got as { says?: string }).says ?? "";
  // the start of the message, in full when it differs
  expect({ [kind]: (got as Record<string, string>)[kind], says: says.startsWith(want.says) ? want.says : says.slice(0, 600) }).toEqual({ [kind]: code, says: want.says });
}

describe("a hostile CortexBuffer", () => {
  for (const [value, info, descriptor, execute] of BUFFERS) {
    for (const [where, want] of [["info", info], ["descriptor", descriptor], ["execute", execute]] as const) {
      test(`${where}:${value}`, { timeout: 20_000 }, async () => {
        const { outcome, ms, counts } = await run(`${where}:${value}`);
        expectOutcome(outcome, want);
        expect(ms).toBeLessThan(CASE_MS);
        // every buffer it returned went back to its buffer_free once (a host that crashed freed none after)
        if (!("says" in want && want.says.includes("crashed"))) {
          expect(counts).not.toBeNull();
          expect(counts!.freed + counts!.drops!).toBe(counts!.returned);
        }
      });
    }
  }
});

describe("a hostile tool table", () => {
  test.each(TABLE)("%s", async (setting, want) => {
    const { outcome, ms } = await run(setting);
    expectOutcome(outcome, want);
    expect(ms).toBeLessThan(CASE_MS);
  }, 20_000);

  test("past_end:same (a buffer handed out twice, the second time dangling) is refused or crashes the plugin host, never this process", async () => {
    const { outcome, ms } = await run("past_end:same");
    expect("load" in outcome && ["E_HANDSHAKE", "E_MANIFEST", "E_CRASHED"].includes(outcome.load)).toBe(true);
    expect(ms).toBeLessThan(CASE_MS);
  }, 20_000);
});
