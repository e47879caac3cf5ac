#!/usr/bin/env bun
/**
 * Prints the fault matrix (test/integration/fault-matrix.cases.ts) as a Markdown table, for the
 * README: one row per misbehaviour, one column per export.
 */
import { EXPORTS, FAULT_NAMES, FAULTS, ROWS } from "../test/integration/fault-matrix.cases.ts";

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
console.log(lines.join("\n"));
