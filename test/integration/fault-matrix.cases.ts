/**
 * The fault matrix: each misbehaviour in each export where it applies, and what cxagent does
 * about it. The test (fault-matrix.test.ts) drives every row through the `faulty` fixture; the
 * README's table is printed from the same rows by scripts/fault-table.ts.
 */

export const EXPORTS = ["describe", "start", "invoke", "gate", "poll", "command", "stop"] as const;
export const FAULTS = ["segfault", "abort", "exit", "hang", "null", "invalid_json", "json_null", "big", "bad_utf8", "stdout", "stderr"] as const;
export type Export = (typeof EXPORTS)[number];
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

/** What a row expects: an error (code + words in its message) or a documented outcome. */
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

export interface Row {
  export: Export;
  fault: Fault;
  expected: Expected;
  /** The README's cell: the error code, or what happens instead. */
  outcome: string;
}

const short = (cause: string) => cause.replace("signal ", "").replace("exit code ", "exit ");
const crash = (cause: string, where: string): Expected => ({ error: "E_CRASHED", says: `(${cause}) ${where}` });
const CAUSES = { segfault: "signal SIGSEGV", abort: "signal SIGABRT", exit: "exit code 3" } as const;

function rowsFor(e: Export): Row[] {
  const rows: Row[] = [];
  const add = (fault: Fault, expected: Expected, outcome: string) => rows.push({ export: e, fault, expected, outcome });
  for (const f of ["segfault", "abort", "exit"] as const) {
    const cause = CAUSES[f];
    switch (e) {
      case "describe":
        add(f, crash(cause, "during cxagent_plugin_describe"), `E_CRASHED (${short(cause)})`);
        break;
      case "start":
        add(f, crash(cause, "while cxagent_plugin_start was running"), `E_CRASHED (${short(cause)})`);
        break;
      case "invoke":
        add(f, crash(cause, "while cxagent_plugin_invoke of work was running"), `E_CRASHED (${short(cause)}), restart`);
        break;
      case "gate":
        add(f, { decision: "failed", says: "the plugin crashed" }, "failed gate, restart");
        break;
      case "poll":
        add(f, { pollCrash: cause }, `logged (${short(cause)}), restart`);
        break;
      case "command":
        add(f, crash(cause, "while cxagent_plugin_command 'say' was running"), `E_CRASHED (${short(cause)})`);
        break;
      case "stop":
        add(f, { stopLog: `(${cause}) while cxagent_plugin_stop was running` }, `logged (${short(cause)})`);
        break;
    }
  }
  switch (e) {
    case "describe":
      add("hang", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in cxagent_plugin_describe)" }, "E_TIMEOUT, killed");
      add("null", { error: "E_MANIFEST", says: "cxagent_plugin_describe returned NULL" }, "E_MANIFEST");
      add("invalid_json", { error: "E_MANIFEST", says: "cxagent_plugin_describe returned invalid JSON" }, "E_MANIFEST + preview");
      add("json_null", { error: "E_MANIFEST", says: "the manifest is null, not a JSON object" }, "E_MANIFEST");
      add("big", { error: "E_MISMATCH", says: "the sidecar declares instructions=null" }, "E_MISMATCH");
      add("bad_utf8", { error: "E_MISMATCH", says: 'describe returned version="1.0.\ufffd"' }, "U+FFFD → E_MISMATCH");
      add("stdout", { loads: true }, "ok, text logged");
      add("stderr", { loads: true }, "ok, lines logged");
      break;
    case "start":
      add("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_start did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      add("null", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned NULL" }, "E_BAD_REPLY");
      add("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned invalid JSON" }, "E_BAD_REPLY + preview");
      add("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_start returned null where a result envelope object belongs" }, "E_BAD_REPLY");
      add("big", { loads: true }, "ok, whole");
      add("bad_utf8", { error: "E_PLUGIN_FAILED", says: "failed to start: bad \ufffd bytes" }, "E_PLUGIN_FAILED, U+FFFD");
      add("stdout", { loads: true }, "ok, text logged");
      add("stderr", { loads: true }, "ok, lines logged");
      break;
    case "invoke":
      add("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_invoke of work did not answer within 500 ms" }, "E_TIMEOUT");
      add("null", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned NULL" }, "E_BAD_REPLY");
      add("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned invalid JSON" }, "E_BAD_REPLY + preview");
      add("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_invoke returned null where a result envelope object belongs" }, "E_BAD_REPLY");
      add("big", { result: "big" }, "ok, whole");
      add("bad_utf8", { result: "replaced" }, "ok, U+FFFD");
      add("stdout", { result: "fine" }, "ok, text logged");
      add("stderr", { result: "fine" }, "ok, lines logged");
      break;
    case "gate":
      add("hang", { decision: "failed", says: "it took longer than 300 ms" }, "failed gate");
      add("null", { decision: "no prompt" }, "no prompt");
      add("invalid_json", { decision: "failed", says: "returned invalid JSON" }, "failed gate");
      add("json_null", { decision: "failed", says: "it returned JSON null" }, "failed gate");
      add("big", { decision: "big" }, "asks, whole wording ¹");
      add("bad_utf8", { decision: "replaced" }, "asks, U+FFFD");
      add("stdout", { decision: "no prompt" }, "no prompt, text logged");
      add("stderr", { decision: "no prompt" }, "no prompt, lines logged");
      break;
    case "poll":
      add("hang", { pollHang: true }, "calls go on; stop deadline ²");
      add("null", { submit: "polled" }, "nothing");
      add("invalid_json", { pollLog: "cxagent_plugin_poll returned invalid JSON" }, "logged, polling goes on");
      add("json_null", { pollLog: "cxagent_plugin_poll returned null instead of a submit object" }, "logged, polling goes on");
      add("big", { submit: "big" }, "submit, whole");
      add("bad_utf8", { submit: "replaced" }, "submit, U+FFFD");
      add("stdout", { submit: "polled" }, "submit, text logged");
      add("stderr", { submit: "polled" }, "submit, lines logged");
      break;
    case "command":
      add("hang", { error: "E_TIMEOUT", says: "cxagent_plugin_command 'say' did not answer within 500 ms" }, "E_TIMEOUT");
      add("null", { command: "null" }, "reported, no message");
      add("invalid_json", { error: "E_BAD_REPLY", says: "cxagent_plugin_command returned invalid JSON" }, "E_BAD_REPLY");
      add("json_null", { error: "E_BAD_REPLY", says: "cxagent_plugin_command returned null, not" }, "E_BAD_REPLY");
      add("big", { command: "big" }, "ok, whole");
      add("bad_utf8", { command: "replaced" }, "ok, U+FFFD");
      add("stdout", { command: "fine" }, "ok, text logged");
      add("stderr", { command: "fine" }, "ok, lines logged");
      break;
    case "stop":
      add("hang", { stopLog: "cxagent_plugin_stop did not answer within 1000 ms" }, "logged, killed");
      add("null", { stopLog: "cxagent_plugin_stop returned NULL" }, "logged");
      add("invalid_json", { stopLog: "cxagent_plugin_stop returned invalid JSON" }, "logged");
      add("json_null", { stopLog: "cxagent_plugin_stop returned null where a result envelope object belongs" }, "logged");
      add("big", { stopLog: null }, "ok");
      add("bad_utf8", { stopLog: "cxagent_plugin_stop failed: bad \ufffd bytes" }, "logged, U+FFFD");
      add("stdout", { stopLog: null }, "ok, text logged");
      add("stderr", { stopLog: null }, "ok");
      break;
  }
  return rows;
}

export const ROWS: Row[] = EXPORTS.flatMap(rowsFor);

// --- Cortex native plugins (issue 17): the same misbehaviours in the functions of a Cortex table ---

/** Where a Cortex plugin misbehaves (test/fixtures/cortex/cortex-basic.c, CXAGENT_FX_FAULT). */
export const CORTEX_FUNCTIONS = ["init", "info", "descriptor", "execute", "drop"] as const;
export const CORTEX_FAULTS = ["segfault", "abort", "exit", "hang", "invalid_json", "empty", "bad_utf8"] as const;
export type CortexFunction = (typeof CORTEX_FUNCTIONS)[number];
export type CortexFault = (typeof CORTEX_FAULTS)[number];

export const CORTEX_FUNCTION_NAMES: Record<CortexFunction, string> = {
  init: "cortex_plugin_init",
  info: "plugin_info",
  descriptor: "tool_descriptor",
  execute: "tool_execute",
  drop: "plugin_drop",
};

export const CORTEX_FAULT_NAMES: Record<CortexFault, string> = {
  segfault: "segfault",
  abort: "abort()",
  exit: "exit(3)",
  hang: "hang (past its deadline)",
  invalid_json: "invalid JSON",
  empty: "an empty buffer",
  bad_utf8: "invalid UTF-8",
};

export type CortexExpected = { error: string; says: string } | { result: "replaced" } | { stopLog: string };

export interface CortexRow {
  where: CortexFunction;
  fault: CortexFault;
  expected: CortexExpected;
  outcome: string;
}

function cortexRowsFor(w: CortexFunction): CortexRow[] {
  const rows: CortexRow[] = [];
  const add = (fault: CortexFault, expected: CortexExpected, outcome: string) => rows.push({ where: w, fault, expected, outcome });
  const name = CORTEX_FUNCTION_NAMES[w];
  for (const f of ["segfault", "abort", "exit"] as const) {
    const cause = CAUSES[f];
    const crashed = (where: string) => ({ error: "E_CRASHED", says: `(${cause}) ${where}` });
    if (w === "execute") add(f, crashed("while tool_execute of work was running"), `E_CRASHED (${short(cause)}), restart`);
    else if (w === "drop") add(f, { stopLog: `(${cause}) while plugin_drop was running` }, `logged (${short(cause)})`);
    else add(f, crashed(`during ${name}`), `E_CRASHED (${short(cause)})`);
  }
  if (w === "execute") {
    add("hang", { error: "E_TIMEOUT", says: "tool_execute of work did not answer within 500 ms" }, "E_TIMEOUT");
    add("invalid_json", { error: "E_BAD_REPLY", says: 'tool_execute returned invalid JSON (an unexpected character at byte 11): {"output": tru' }, "E_BAD_REPLY + preview");
    add("empty", { error: "E_BAD_REPLY", says: "tool_execute returned an empty buffer, not a ToolResult" }, "E_BAD_REPLY");
    add("bad_utf8", { result: "replaced" }, "ok, U+FFFD");
  } else if (w === "drop") {
    add("hang", { stopLog: "plugin_drop did not answer within 1000 ms" }, "logged, killed");
  } else {
    add("hang", { error: "E_TIMEOUT", says: `did not become ready within 1.5 s (it was in ${name})` }, "E_TIMEOUT, killed");
    if (w !== "init") {
      const call = w === "info" ? "plugin_info" : "tool_descriptor(0)";
      add("invalid_json", { error: "E_HANDSHAKE", says: `${call} is invalid:\n  - it is not valid JSON` }, "E_HANDSHAKE + preview");
      add("empty", { error: "E_HANDSHAKE", says: `${call} returned an empty buffer` }, "E_HANDSHAKE");
      add("bad_utf8", { error: "E_HANDSHAKE", says: `${call} returned bytes that are not UTF-8` }, "E_HANDSHAKE");
    }
  }
  return rows;
}

export const CORTEX_ROWS: CortexRow[] = CORTEX_FUNCTIONS.flatMap(cortexRowsFor);
