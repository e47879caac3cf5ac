/**
 * The fault matrix, one table: a row per request a plugin answers (describe, start, invoke, gate,
 * poll, command, stop) and a column per kind of plugin (native C ABI, Cortex, TypeScript module),
 * each cell the misbehaviours that kind's fixture can show there and what cxagent does about
 * each. The tests drive every cell through the kind's fixture (fault-matrix.test.ts: the native
 * `faulty` fixture and test/fixtures/cortex/cortex-basic.c; fault-matrix-module.test.ts:
 * test/fixtures/modules/faulty-module); the README's tables are printed from the same table by
 * scripts/fault-table.ts. A crash is written once for every kind, in each kind's names for what
 * a request calls (its profile's, src/kinds/).
 */
import type { PluginKind } from "../../src/protocol/host-args.ts";
import { profileOf } from "../../src/kinds/index.ts";

/** The requests, in the order of the table's rows; the native and module fixtures name them so. */
export const EXPORTS = ["describe", "start", "invoke", "gate", "poll", "command", "stop"] as const;
export type Export = (typeof EXPORTS)[number];
/** A module plugin's functions are the requests' names (faulty-module's CXAGENT_FX_FAULT). */
export const FUNCTIONS = EXPORTS;
export type ModuleFunction = Export;

/** What the native fixture can do wrong (faulty.c). */
export const FAULTS = ["segfault", "abort", "exit", "hang", "null", "invalid_json", "json_null", "big", "bad_utf8", "stdout", "stderr"] as const;
export type Fault = (typeof FAULTS)[number];
export const FAULT_NAMES: Record<Fault, string> = {
  segfault: "segfault",
  abort: "abort()",
  exit: "exit(3)",
  hang: "hang (past its deadline)",
  null: "NULL",
  invalid_json: "invalid JSON",
  json_null: "JSON null",
  big: "a 50 MB answer",
  bad_utf8: "invalid UTF-8",
  stdout: "printf to stdout",
  stderr: "10 MB to stderr",
};

/** Where a Cortex plugin misbehaves (cortex-basic.c, CXAGENT_FX_FAULT): describe is three functions of its table. */
export const CORTEX_FUNCTIONS = ["init", "info", "descriptor", "execute", "drop"] as const;
export type CortexFunction = (typeof CORTEX_FUNCTIONS)[number];
export const CORTEX_FUNCTION_NAMES: Record<CortexFunction, string> = {
  init: "cortex_plugin_init",
  info: "plugin_info",
  descriptor: "tool_descriptor",
  execute: "tool_execute",
  drop: "plugin_drop",
};
export const CORTEX_FAULTS = ["segfault", "abort", "exit", "hang", "invalid_json", "empty", "bad_utf8"] as const;
export type CortexFault = (typeof CORTEX_FAULTS)[number];
export const CORTEX_FAULT_NAMES: Record<CortexFault, string> = {
  segfault: "segfault",
  abort: "abort()",
  exit: "exit(3)",
  hang: "hang (past its deadline)",
  invalid_json: "invalid JSON",
  empty: "an empty buffer",
  bad_utf8: "invalid UTF-8",
};

/** What a module plugin can do wrong (faulty-module). */
export const MODULE_FAULTS = ["throw", "reject", "floating", "exit", "crash", "hang", "spin", "undefined", "wrong_type", "unserializable", "big", "stdout", "stderr"] as const;
export type ModuleFault = (typeof MODULE_FAULTS)[number];
export const MODULE_FAULT_NAMES: Record<ModuleFault, string> = {
  throw: "throws",
  reject: "rejects",
  floating: "an error nobody awaits",
  exit: "process.exit(3)",
  crash: "segfault (bun:ffi)",
  hang: "never settles (past its deadline)",
  spin: "busy loop (past its deadline)",
  undefined: "returns undefined",
  wrong_type: "returns a string",
  unserializable: "returns a BigInt",
  big: "a 50 MB answer",
  stdout: "console.log protocol-like lines",
  stderr: "10 MB to stderr",
};

/** What a cell expects: an error (code + words in its message) or a documented outcome. */
export type Expected =
  | { error: string; says: string }
  | { loads: true }
  | { result: "fine" | "big" | "replaced" }
  | { decision: "no prompt" | "failed" | "big" | "replaced"; says?: string }
  | { submit: "polled" | "big" | "replaced" }
  | { pollLog: string }
  | { pollCrash: string }
  | { pollHang: true }
  | { command: "fine" | "null" | "big" | "replaced" }
  | { stopLog: string | null };

/** One misbehaviour of one kind in one request: what is expected, and the README's cell. */
export interface Cell<F extends string> {
  fault: F;
  expected: Expected;
  outcome: string;
}

/** A row of the table: one request, a column per kind. A Cortex plugin's describe is three functions, each with its cells. */
export interface MatrixRow {
  request: Export;
  native: Cell<Fault>[];
  cortex: { where: CortexFunction; cells: Cell<CortexFault>[] }[];
  module: Cell<ModuleFault>[];
}

const short = (cause: string) => cause.replace("signal ", "").replace("exit code ", "exit ");
const crash = (cause: string, where: string): Expected => ({ error: "E_CRASHED", says: `(${cause}) ${where}` });
/** The crashes each kind's fixture can cause, and how the host ends for each. */
const CRASHES = {
  native: { segfault: "signal SIGSEGV", abort: "signal SIGABRT", exit: "exit code 3" },
  module: { exit: "exit code 3", crash: "signal SIGSEGV", floating: "exit code 1" },
} as const;

/** What describes a plugin, as a crash's message names it (a Cortex plugin's is three functions: see rowOf). */
const DESCRIBE: Record<PluginKind, string> = { native: "cxagent_plugin_describe", cortex: "plugin_info", module: "describe()", "cortex-process": "manifest.toml" };

/** A crash in `request`, as a kind whose profile names what the request calls (`exports`). */
function crashCell<F extends string>(kind: PluginKind, request: Export, fault: F, cause: string): Cell<F> {
  const calls = profileOf(kind).exports;
  const cell = (expected: Expected, outcome: string): Cell<F> => ({ fault, expected, outcome });
  switch (request) {
    case "describe":
      return cell(crash(cause, `during ${DESCRIBE[kind]}`), `E_CRASHED (${short(cause)})`);
    case "invoke":
      return cell(crash(cause, `while ${calls.invoke} of work was running`), `E_CRASHED (${short(cause)}), restart`);
    case "gate":
      return cell({ decision: "failed", says: "the plugin crashed" }, "failed gate, restart");
    case "poll":
      return cell({ pollCrash: cause }, `logged (${short(cause)}), restart`);
    case "command":
      return cell(crash(cause, `while ${calls.command} 'say' was running`), `E_CRASHED (${short(cause)})`);
    case "stop":
      return cell({ stopLog: `(${cause}) while ${calls.stop} was running` }, `logged (${short(cause)})`);
    case "start":
      return cell(crash(cause, `while ${calls.start} was running`), `E_CRASHED (${short(cause)})`);
  }
}

/** Adds cells to a column: `add(fault, expected, outcome)`. */
function column<F extends string>(cells: Cell<F>[]) {
  return (fault: F, expected: Expected, outcome: string) => void cells.push({ fault, expected, outcome });
}

function rowOf(request: Export): MatrixRow {
  const row: MatrixRow = { request, native: [], cortex: [], module: [] };
  const native = column(row.native);
  const module = column(row.module);
  for (const [fault, cause] of Object.entries(CRASHES.native)) row.native.push(crashCell("native", request, fault as Fault, cause));
  for (const [fault, cause] of Object.entries(CRASHES.module)) row.module.push(crashCell("module", request, fault as ModuleFault, cause));
  const thrown = `faulty ${request}`;
  switch (request) {
    case "describe":
      native("hang", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in cxagent_plugin_describe)" }, "E_TIMEOUT, killed");
      native("null", { error: "E_MANIFEST", says: "cxagent_plugin_describe returned NULL" }, "E_MANIFEST");
      native("invalid_json", { error: "E_MANIFEST", says: "cxagent_plugin_describe returned invalid JSON" }, "E_MANIFEST + preview");
      native("json_null", { error: "E_MANIFEST", says: "the manifest is null, not a JSON object" }, "E_MANIFEST");
      native("big", { error: "E_MISMATCH", says: "the sidecar declares instructions=null" }, "E_MISMATCH");
      native("bad_utf8", { error: "E_MISMATCH", says: 'describe returned version="1.0.\ufffd"' }, "U+FFFD → E_MISMATCH");
      native("stdout", { loads: true }, "ok, text logged");
      native("stderr", { loads: true }, "ok, lines logged");
      module("throw", { error: "E_MANIFEST", says: `describe() failed: ${thrown}` }, "E_MANIFEST");
      module("reject", { error: "E_MANIFEST", says: `describe() failed: ${thrown}` }, "E_MANIFEST");
      module("hang", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in describe())" }, "E_TIMEOUT, killed");
      module("spin", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in describe())" }, "E_TIMEOUT, killed");
      module("undefined", { error: "E_MANIFEST", says: "describe() returned undefined" }, "E_MANIFEST");
      module("wrong_type", { error: "E_MANIFEST", says: 'the manifest is the string "not an object", not a JSON object' }, "E_MANIFEST");
      module("unserializable", { error: "E_MANIFEST", says: "describe() returned a value that cannot be written as JSON" }, "E_MANIFEST");
      module("big", { error: "E_MISMATCH", says: "the sidecar declares instructions=null" }, "E_MISMATCH");
      module("stdout", { loads: true }, "ok, text logged");
      module("stderr", { loads: true }, "ok, lines logged");
      // A Cortex plugin describes itself in three functions of its table.
      for (const where of ["init", "info", "descriptor"] as const) {
        const cells: Cell<CortexFault>[] = [];
        const cortex = column(cells);
        const name = CORTEX_FUNCTION_NAMES[where];
        for (const [fault, cause] of Object.entries(CRASHES.native)) cortex(fault as CortexFault, crash(cause, `during ${name}`), `E_CRASHED (${short(cause)})`);
        cortex("hang", { error: "E_TIMEOUT", says: `did not become ready within 1.5 s (it was in ${name})` }, "E_TIMEOUT, killed");
        if (where !== "init") {
          const call = where === "info" ? "plugin_info" : "tool_descriptor(0)";
          cortex("invalid_json", { error: "E_HANDSHAKE", says: `${call} is invalid:\n  - it is not valid JSON` }, "E_HANDSHAKE + preview");
          cortex("empty", { error: "E_HANDSHAKE", says: `${call} returned an empty buffer` }, "E_HANDSHAKE");
          cortex("bad_utf8", { error: "E_HANDSHAKE", says: `${call} returned bytes that are not UTF-8` }, "E_HANDSHAKE");
        }
        row.cortex.push({ where, cells });
      }
      break;
    case "start":
      native("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_start did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      native("null", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned NULL" }, "E_BAD_REPLY");
      native("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned invalid JSON" }, "E_BAD_REPLY + preview");
      native("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned null where a result envelope object belongs" }, "E_BAD_REPLY");
      native("big", { loads: true }, "ok, whole");
      native("bad_utf8", { error: "E_PLUGIN_FAILED", says: "failed to start: bad \ufffd bytes" }, "E_PLUGIN_FAILED, U+FFFD");
      native("stdout", { loads: true }, "ok, text logged");
      native("stderr", { loads: true }, "ok, lines logged");
      module("throw", { error: "E_PLUGIN_FAILED", says: `failed to start: ${thrown}` }, "E_PLUGIN_FAILED");
      module("reject", { error: "E_PLUGIN_FAILED", says: `failed to start: ${thrown}` }, "E_PLUGIN_FAILED");
      module("hang", { error: "E_TIMEOUT", says: "start() did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      module("spin", { error: "E_TIMEOUT", says: "start() did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      for (const f of ["undefined", "wrong_type", "unserializable", "big"] as const) module(f, { loads: true }, "ok (the value is not read)");
      module("stdout", { loads: true }, "ok, text logged");
      module("stderr", { loads: true }, "ok, lines logged");
      break;
    case "invoke": {
      native("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_invoke of work did not answer within 500 ms" }, "E_TIMEOUT");
      native("null", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned NULL" }, "E_BAD_REPLY");
      native("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned invalid JSON" }, "E_BAD_REPLY + preview");
      native("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned null where a result envelope object belongs" }, "E_BAD_REPLY");
      native("big", { result: "big" }, "ok, whole");
      native("bad_utf8", { result: "replaced" }, "ok, U+FFFD");
      native("stdout", { result: "fine" }, "ok, text logged");
      native("stderr", { result: "fine" }, "ok, lines logged");
      module("throw", { error: "E_PLUGIN_FAILED", says: `work failed: ${thrown}` }, "E_PLUGIN_FAILED");
      module("reject", { error: "E_PLUGIN_FAILED", says: `work failed: ${thrown}` }, "E_PLUGIN_FAILED");
      module("hang", { error: "E_TIMEOUT", says: "invoke() of work did not answer within 500 ms" }, "E_TIMEOUT, cancelled");
      module("spin", { error: "E_TIMEOUT", says: "invoke() of work did not answer within 500 ms" }, "E_TIMEOUT; the plugin is held ³");
      module("undefined", { error: "E_BAD_REPLY", says: "invoke() returned undefined, not a JobResult object" }, "E_BAD_REPLY");
      module("wrong_type", { error: "E_BAD_REPLY", says: 'invoke() returned the string "not an object", not a JobResult object' }, "E_BAD_REPLY");
      module("unserializable", { error: "E_BAD_REPLY", says: "invoke() returned a value that cannot be written as JSON" }, "E_BAD_REPLY");
      module("big", { result: "big" }, "ok, whole");
      module("stdout", { result: "fine" }, "ok, text logged");
      module("stderr", { result: "fine" }, "ok, lines logged");
      const cells: Cell<CortexFault>[] = [];
      const cortex = column(cells);
      for (const [fault, cause] of Object.entries(CRASHES.native)) cells.push(crashCell("cortex", "invoke", fault as CortexFault, cause));
      cortex("hang", { error: "E_TIMEOUT", says: "tool_execute of work did not answer within 500 ms" }, "E_TIMEOUT");
      cortex("invalid_json", { error: "E_BAD_REPLY", says: 'tool_execute returned invalid JSON (an unexpected character at byte 11): {"output": tru' }, "E_BAD_REPLY + preview");
      cortex("empty", { error: "E_BAD_REPLY", says: "tool_execute returned an empty buffer, not a ToolResult" }, "E_BAD_REPLY");
      cortex("bad_utf8", { result: "replaced" }, "ok, U+FFFD");
      row.cortex.push({ where: "execute", cells });
      break;
    }
    case "gate":
      native("hang", { decision: "failed", says: "it took longer than 300 ms" }, "failed gate");
      native("null", { decision: "no prompt" }, "no prompt");
      native("invalid_json", { decision: "failed", says: "returned invalid JSON" }, "failed gate");
      native("json_null", { decision: "failed", says: "it returned JSON null" }, "failed gate");
      native("big", { decision: "big" }, "asks, whole wording ¹");
      native("bad_utf8", { decision: "replaced" }, "asks, U+FFFD");
      native("stdout", { decision: "no prompt" }, "no prompt, text logged");
      native("stderr", { decision: "no prompt" }, "no prompt, lines logged");
      module("throw", { decision: "failed", says: thrown }, "failed gate");
      module("reject", { decision: "failed", says: thrown }, "failed gate");
      module("hang", { decision: "failed", says: "it took longer than 300 ms" }, "failed gate, cancelled");
      module("undefined", { decision: "no prompt" }, "no prompt");
      module("wrong_type", { decision: "failed", says: "it returned string, not an object" }, "failed gate");
      module("unserializable", { decision: "failed", says: "gate() returned a value that cannot be written as JSON" }, "failed gate");
      module("big", { decision: "big" }, "asks, whole wording ¹");
      module("stdout", { decision: "no prompt" }, "no prompt, text logged");
      module("stderr", { decision: "no prompt" }, "no prompt, lines logged");
      break;
    case "poll":
      native("hang", { pollHang: true }, "calls go on; stop deadline ²");
      native("null", { submit: "polled" }, "nothing");
      native("invalid_json", { pollLog: "cxagent_plugin_poll returned invalid JSON" }, "logged, polling goes on");
      native("json_null", { pollLog: "cxagent_plugin_poll returned null instead of a submit object" }, "logged, polling goes on");
      native("big", { submit: "big" }, "submit, whole");
      native("bad_utf8", { submit: "replaced" }, "submit, U+FFFD");
      native("stdout", { submit: "polled" }, "submit, text logged");
      native("stderr", { submit: "polled" }, "submit, lines logged");
      module("throw", { pollLog: `poll() failed: ${thrown}` }, "logged, polling goes on");
      module("reject", { pollLog: `poll() failed: ${thrown}` }, "logged, polling goes on");
      module("hang", { pollHang: true }, "calls go on; stop deadline ²");
      module("undefined", { submit: "polled" }, "nothing");
      module("wrong_type", { pollLog: 'poll() returned the string "not an object" instead of a submit object' }, "logged, polling goes on");
      module("unserializable", { pollLog: "poll() returned a value that cannot be written as JSON" }, "logged, polling goes on");
      module("big", { submit: "big" }, "submit, whole");
      module("stdout", { submit: "polled" }, "submit, text logged");
      module("stderr", { submit: "polled" }, "submit, lines logged");
      break;
    case "command":
      native("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_command 'say' did not answer within 500 ms" }, "E_TIMEOUT");
      native("null", { command: "null" }, "reported, no message");
      native("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_command returned invalid JSON" }, "E_BAD_REPLY");
      native("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_command returned null, not" }, "E_BAD_REPLY");
      native("big", { command: "big" }, "ok, whole");
      native("bad_utf8", { command: "replaced" }, "ok, U+FFFD");
      native("stdout", { command: "fine" }, "ok, text logged");
      native("stderr", { command: "fine" }, "ok, lines logged");
      module("throw", { error: "E_PLUGIN_FAILED", says: `command 'say' failed: ${thrown}` }, "E_PLUGIN_FAILED");
      module("reject", { error: "E_PLUGIN_FAILED", says: `command 'say' failed: ${thrown}` }, "E_PLUGIN_FAILED");
      module("hang", { error: "E_TIMEOUT", says: "command() 'say' did not answer within 500 ms" }, "E_TIMEOUT, cancelled");
      module("undefined", { command: "null" }, "reported, no message");
      module("wrong_type", { error: "E_BAD_REPLY", says: 'command() returned "not an object", not' }, "E_BAD_REPLY");
      module("unserializable", { error: "E_BAD_REPLY", says: "command() returned a value that cannot be written as JSON" }, "E_BAD_REPLY");
      module("big", { command: "big" }, "ok, whole");
      module("stdout", { command: "fine" }, "ok, text logged");
      module("stderr", { command: "fine" }, "ok, lines logged");
      break;
    case "stop": {
      native("hang", { stopLog: "cxagent_plugin_stop did not answer within 1000 ms" }, "logged, killed");
      native("null", { stopLog: "cxagent_plugin_stop returned NULL" }, "logged");
      native("invalid_json", { stopLog: "cxagent_plugin_stop returned invalid JSON" }, "logged");
      native("json_null", { stopLog: "cxagent_plugin_stop returned null where a result envelope object belongs" }, "logged");
      native("big", { stopLog: null }, "ok");
      native("bad_utf8", { stopLog: "cxagent_plugin_stop failed: bad \ufffd bytes" }, "logged, U+FFFD");
      native("stdout", { stopLog: null }, "ok, text logged");
      native("stderr", { stopLog: null }, "ok");
      module("throw", { stopLog: `stop() failed: ${thrown}` }, "logged");
      module("reject", { stopLog: `stop() failed: ${thrown}` }, "logged");
      module("hang", { stopLog: "stop() did not answer within 1000 ms" }, "logged, killed");
      module("spin", { stopLog: "stop() did not answer within 1000 ms" }, "logged, killed");
      for (const f of ["undefined", "wrong_type", "unserializable", "big"] as const) module(f, { stopLog: null }, "ok (the value is not read)");
      module("stdout", { stopLog: null }, "ok, text logged");
      module("stderr", { stopLog: null }, "ok");
      const cells: Cell<CortexFault>[] = [];
      for (const [fault, cause] of Object.entries(CRASHES.native)) cells.push(crashCell("cortex", "stop", fault as CortexFault, cause));
      column(cells)("hang", { stopLog: "plugin_drop did not answer within 1000 ms" }, "logged, killed");
      row.cortex.push({ where: "drop", cells });
      break;
    }
  }
  return row;
}

/** The table. */
export const MATRIX: MatrixRow[] = EXPORTS.map(rowOf);

/** One kind's column as the rows its test drives: the native fixture's, by export. */
export interface Row {
  export: Export;
  fault: Fault;
  expected: Expected;
  /** The README's cell: the error code, or what happens instead. */
  outcome: string;
}
export type CortexExpected = { error: string; says: string } | { result: "replaced" } | { stopLog: string };
export interface CortexRow {
  where: CortexFunction;
  fault: CortexFault;
  expected: CortexExpected;
  outcome: string;
}
export interface ModuleRow {
  fn: ModuleFunction;
  fault: ModuleFault;
  expected: Expected;
  /** The README's cell. */
  outcome: string;
}

export const ROWS: Row[] = MATRIX.flatMap((r) => r.native.map((c) => ({ export: r.request, ...c })));
export const CORTEX_ROWS: CortexRow[] = MATRIX.flatMap((r) => r.cortex.flatMap(({ where, cells }) => cells.map((c) => ({ where, ...c, expected: c.expected as CortexExpected }))));
export const MODULE_ROWS: ModuleRow[] = MATRIX.flatMap((r) => r.module.map((c) => ({ fn: r.request, ...c })));
