#!/usr/bin/env bun
/**
 * Prints the fault matrix (test/integration/fault-matrix.cases.ts) as a Markdown table, for the
 * README: one row per misbehaviour, one column per export.
 */
import {
  CORTEX_FAULT_NAMES,
  CORTEX_FAULTS,
  CORTEX_FUNCTION_NAMES,
  CORTEX_FUNCTIONS,
  CORTEX_ROWS,
  EXPORTS,
  FAULT_NAMES,
  FAULTS,
  ROWS,
} from "../test/integration/fault-matrix.cases.ts";

const cell = (e: string, f: string) => ROWS.find((r) => r.export === e && r.fault === f)?.outcome ?? "—";
const lines = [
  `| misbehaviour | ${EXPORTS.join(" | ")} |`,
  `| --- | ${EXPORTS.map(() => "---").join(" | ")} |`,
  ...FAULTS.map((f) => `| ${FAULT_NAMES[f]} | ${EXPORTS.map((e) => cell(e, f)).join(" | ")} |`),
];
lines.push(
  "",
  "Every row also checks that the session and another plugin in it carry on, that each string the",
  "plugin returned was freed exactly once, and that no plugin host is left running. \"restart\": the",
  "next call starts a fresh plugin host. \"killed\": the host is ended at the deadline. \"whole\": a",
  "50 MB answer arrives intact (lines may be up to 64 MiB). U+FFFD: invalid UTF-8 bytes are replaced.",
  "¹ A 50 MB gate answer rarely arrives within the 500 ms gate deadline; then it is a failed gate.",
  "² A poll stuck in native code delays stop until the stop deadline; the host is then ended.",
);
const cortexCell = (w: string, f: string) => CORTEX_ROWS.find((r) => r.where === w && r.fault === f)?.outcome ?? "—";
lines.push(
  "",
  "A Cortex native plugin, the same way (`test/fixtures/cortex/cortex-basic.c`), in each function of",
  "its table:",
  "",
  `| misbehaviour | ${CORTEX_FUNCTIONS.map((w) => CORTEX_FUNCTION_NAMES[w]).join(" | ")} |`,
  `| --- | ${CORTEX_FUNCTIONS.map(() => "---").join(" | ")} |`,
  ...CORTEX_FAULTS.map((f) => `| ${CORTEX_FAULT_NAMES[f]} | ${CORTEX_FUNCTIONS.map((w) => cortexCell(w, f)).join(" | ")} |`),
  "",
  "Each row also checks that the session and another plugin in it carry on, that every buffer the",
  "plugin returned went back to its buffer_free exactly once, with its cap, and that no plugin host",
  "is left. cortex_plugin_init returns no buffer; the answer to a stop is the shim's own.",
);
console.log(lines.join("\n"));
