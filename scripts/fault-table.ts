#!/usr/bin/env bun
/**
 * Prints the fault matrix (test/integration/fault-matrix.cases.ts, one table with a column per kind)
 * as the README's Markdown tables, a kind at a time: one row per misbehaviour, one column per
 * export — of a native plugin and a Cortex plugin, or with `--module`, per function of a module
 * plugin, or with `--process`, per answer of a Cortex process plugin's tool (one table of its own:
 * test/integration/fault-matrix-process.cases.ts).
 */
import { PROCESS_ROWS } from "../test/integration/fault-matrix-process.cases.ts";
import {
  CORTEX_FAULT_NAMES,
  CORTEX_FAULTS,
  CORTEX_FUNCTION_NAMES,
  CORTEX_FUNCTIONS,
  CORTEX_ROWS,
  EXPORTS,
  FAULT_NAMES,
  FAULTS,
  FUNCTIONS,
  MODULE_FAULT_NAMES,
  MODULE_FAULTS,
  MODULE_ROWS,
  ROWS,
} from "../test/integration/fault-matrix.cases.ts";

function table(columns: readonly string[], faults: readonly string[], name: (f: string) => string, cell: (c: string, f: string) => string | undefined): string[] {
  return [
    `| misbehaviour | ${columns.join(" | ")} |`,
    `| --- | ${columns.map(() => "---").join(" | ")} |`,
    ...faults.map((f) => `| ${name(f)} | ${columns.map((c) => cell(c, f) ?? "—").join(" | ")} |`),
  ];
}

const lines: string[] = [];
if (process.argv.includes("--process")) {
  lines.push(
    "| what the tool's process does | the call |",
    "| --- | --- |",
    ...PROCESS_ROWS.map((r) => `| ${r.name} | ${r.outcome} |`),
    "",
    "Each row also checks that the plugin's next call works. A failed call (E_PLUGIN_FAILED) names the",
    "tool, its command and what was wrong; a result with success: false is the tool's own error.",
  );
} else if (process.argv.includes("--module")) {
  lines.push(
    ...table(FUNCTIONS.map((f) => `${f}()`), MODULE_FAULTS, (f) => MODULE_FAULT_NAMES[f as keyof typeof MODULE_FAULT_NAMES], (c, f) => MODULE_ROWS.find((r) => `${r.fn}()` === c && r.fault === f)?.outcome),
    "",
    "Every row also checks that the session and a native plugin in it carry on, that the protocol stayed",
    "clean, and that no plugin host is left running. \"cancelled\": the parent tells the call its deadline",
    "passed, and its `signal` aborts. \"the value is not read\": start and stop answer nothing but success.",
    "¹ A 50 MB gate answer rarely arrives within the 500 ms gate deadline; then it is a failed gate.",
    "² A poll that never settles delays stop until the stop deadline; the host is then ended.",
    "³ A busy loop holds the plugin's event loop, so its other calls wait too, until stop's deadline ends",
    "the host. \"—\": not driven in a gate, poll or command, where it would hold the very calls that check",
    "the row; it costs the same as in invoke.",
  );
} else {
  lines.push(
    ...table(EXPORTS, FAULTS, (f) => FAULT_NAMES[f as keyof typeof FAULT_NAMES], (e, f) => ROWS.find((r) => r.export === e && r.fault === f)?.outcome),
    "",
    "Every row also checks that the session and another plugin in it carry on, that each string the",
    "plugin returned was freed exactly once, and that no plugin host is left running. \"restart\": the",
    "next call starts a fresh plugin host. \"killed\": the host is ended at the deadline. \"whole\": a",
    "50 MB answer arrives intact (lines may be up to 64 MiB). U+FFFD: invalid UTF-8 bytes are replaced.",
    "¹ A 50 MB gate answer rarely arrives within the 500 ms gate deadline; then it is a failed gate.",
    "² A poll stuck in native code delays stop until the stop deadline; the host is then ended.",
    "",
    "A Cortex native plugin, the same way (`test/fixtures/cortex/cortex-basic.c`), in each function of",
    "its table:",
    "",
    ...table(CORTEX_FUNCTIONS.map((w) => CORTEX_FUNCTION_NAMES[w]), CORTEX_FAULTS, (f) => CORTEX_FAULT_NAMES[f as keyof typeof CORTEX_FAULT_NAMES], (c, f) => CORTEX_ROWS.find((r) => CORTEX_FUNCTION_NAMES[r.where] === c && r.fault === f)?.outcome),
    "",
    "Each row also checks that the session and another plugin in it carry on, that every buffer the",
    "plugin returned went back to its buffer_free exactly once, with its cap, and that no plugin host",
    "is left. cortex_plugin_init returns no buffer; the answer to a stop is the shim's own.",
  );
}
console.log(lines.join("\n"));
