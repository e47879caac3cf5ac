/**
 * The fault matrix of a module plugin (issue 19): each misbehaviour a TypeScript or JavaScript
 * plugin can show, in each function where it applies, and what cxagent does about it. Driven by
 * fault-matrix-module.test.ts through test/fixtures/modules/faulty-module; the README's second
 * table is printed from these rows by scripts/fault-table.ts.
 */
import type { Expected } from "./fault-matrix.cases.ts";

export const FUNCTIONS = ["describe", "start", "invoke", "gate", "poll", "command", "stop"] as const;
export const MODULE_FAULTS = ["throw", "reject", "floating", "exit", "crash", "hang", "spin", "undefined", "wrong_type", "unserializable", "big", "stdout", "stderr"] as const;
export type ModuleFunction = (typeof FUNCTIONS)[number];
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

export interface ModuleRow {
  fn: ModuleFunction;
  fault: ModuleFault;
  expected: Expected;
  /** The README's cell. */
  outcome: string;
}

const crashed = (cause: string, where: string): Expected => ({ error: "E_CRASHED", says: `(${cause}) ${where}` });
const CAUSES = { exit: "exit code 3", crash: "signal SIGSEGV", floating: "exit code 1" } as const;
const short = (cause: string) => cause.replace("signal ", "").replace("exit code ", "exit ");

function rowsFor(fn: ModuleFunction): ModuleRow[] {
  const rows: ModuleRow[] = [];
  const add = (fault: ModuleFault, expected: Expected, outcome: string) => rows.push({ fn, fault, expected, outcome });
  const thrown = `faulty ${fn}`;
  for (const f of ["exit", "crash", "floating"] as const) {
    const cause = CAUSES[f];
    switch (fn) {
      case "describe":
        add(f, crashed(cause, "during describe()"), `E_CRASHED (${short(cause)})`);
        break;
      case "start":
        add(f, crashed(cause, "while start() was running"), `E_CRASHED (${short(cause)})`);
        break;
      case "invoke":
        add(f, crashed(cause, "while invoke() of work was running"), `E_CRASHED (${short(cause)}), restart`);
        break;
      case "gate":
        add(f, { decision: "failed", says: "the plugin crashed" }, "failed gate, restart");
        break;
      case "poll":
        add(f, { pollCrash: cause }, `logged (${short(cause)}), restart`);
        break;
      case "command":
        add(f, crashed(cause, "while command() 'say' was running"), `E_CRASHED (${short(cause)})`);
        break;
      case "stop":
        add(f, { stopLog: `(${cause}) while stop() was running` }, `logged (${short(cause)})`);
        break;
    }
  }
  switch (fn) {
    case "describe":
      add("throw", { error: "E_MANIFEST", says: `describe() failed: ${thrown}` }, "E_MANIFEST");
      add("reject", { error: "E_MANIFEST", says: `describe() failed: ${thrown}` }, "E_MANIFEST");
      add("hang", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in describe())" }, "E_TIMEOUT, killed");
      add("spin", { error: "E_TIMEOUT", says: "did not become ready within 1.5 s (it was in describe())" }, "E_TIMEOUT, killed");
      add("undefined", { error: "E_MANIFEST", says: "describe() returned undefined" }, "E_MANIFEST");
      add("wrong_type", { error: "E_MANIFEST", says: 'the manifest is the string "not an object", not a JSON object' }, "E_MANIFEST");
      add("unserializable", { error: "E_MANIFEST", says: "describe() returned a value that cannot be written as JSON" }, "E_MANIFEST");
      add("big", { error: "E_MISMATCH", says: "the sidecar declares instructions=null" }, "E_MISMATCH");
      add("stdout", { loads: true }, "ok, text logged");
      add("stderr", { loads: true }, "ok, lines logged");
      break;
    case "start":
      add("throw", { error: "E_PLUGIN_FAILED", says: `failed to start: ${thrown}` }, "E_PLUGIN_FAILED");
      add("reject", { error: "E_PLUGIN_FAILED", says: `failed to start: ${thrown}` }, "E_PLUGIN_FAILED");
      add("hang", { error: "E_TIMEOUT", says: "start() did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      add("spin", { error: "E_TIMEOUT", says: "start() did not answer within 1000 ms" }, "E_TIMEOUT, killed");
      for (const f of ["undefined", "wrong_type", "unserializable", "big"] as const) add(f, { loads: true }, "ok (the value is not read)");
      add("stdout", { loads: true }, "ok, text logged");
      add("stderr", { loads: true }, "ok, lines logged");
      break;
    case "invoke":
      add("throw", { error: "E_PLUGIN_FAILED", says: `work failed: ${thrown}` }, "E_PLUGIN_FAILED");
      add("reject", { error: "E_PLUGIN_FAILED", says: `work failed: ${thrown}` }, "E_PLUGIN_FAILED");
      add("hang", { error: "E_TIMEOUT", says: "invoke() of work did not answer within 500 ms" }, "E_TIMEOUT, cancelled");
      add("spin", { error: "E_TIMEOUT", says: "invoke() of work did not answer within 500 ms" }, "E_TIMEOUT; the plugin is held ³");
      add("undefined", { error: "E_BAD_REPLY", says: "invoke() returned undefined, not a JobResult object" }, "E_BAD_REPLY");
      add("wrong_type", { error: "E_BAD_REPLY", says: 'invoke() returned the string "not an object", not a JobResult object' }, "E_BAD_REPLY");
      add("unserializable", { error: "E_BAD_REPLY", says: "invoke() returned a value that cannot be written as JSON" }, "E_BAD_REPLY");
      add("big", { result: "big" }, "ok, whole");
      add("stdout", { result: "fine" }, "ok, text logged");
      add("stderr", { result: "fine" }, "ok, lines logged");
      break;
    case "gate":
      add("throw", { decision: "failed", says: thrown }, "failed gate");
      add("reject", { decision: "failed", says: thrown }, "failed gate");
      add("hang", { decision: "failed", says: "it took longer than 300 ms" }, "failed gate, cancelled");
      add("undefined", { decision: "no prompt" }, "no prompt");
      add("wrong_type", { decision: "failed", says: "it returned string, not an object" }, "failed gate");
      add("unserializable", { decision: "failed", says: "gate() returned a value that cannot be written as JSON" }, "failed gate");
      add("big", { decision: "big" }, "asks, whole wording ¹");
      add("stdout", { decision: "no prompt" }, "no prompt, text logged");
      add("stderr", { decision: "no prompt" }, "no prompt, lines logged");
      break;
    case "poll":
      add("throw", { pollLog: `poll() failed: ${thrown}` }, "logged, polling goes on");
      add("reject", { pollLog: `poll() failed: ${thrown}` }, "logged, polling goes on");
      add("hang", { pollHang: true }, "calls go on; stop deadline ²");
      add("undefined", { submit: "polled" }, "nothing");
      add("wrong_type", { pollLog: 'poll() returned the string "not an object" instead of a submit object' }, "logged, polling goes on");
      add("unserializable", { pollLog: "poll() returned a value that cannot be written as JSON" }, "logged, polling goes on");
      add("big", { submit: "big" }, "submit, whole");
      add("stdout", { submit: "polled" }, "submit, text logged");
      add("stderr", { submit: "polled" }, "submit, lines logged");
      break;
    case "command":
      add("throw", { error: "E_PLUGIN_FAILED", says: `command 'say' failed: ${thrown}` }, "E_PLUGIN_FAILED");
      add("reject", { error: "E_PLUGIN_FAILED", says: `command 'say' failed: ${thrown}` }, "E_PLUGIN_FAILED");
      add("hang", { error: "E_TIMEOUT", says: "command() 'say' did not answer within 500 ms" }, "E_TIMEOUT, cancelled");
      add("undefined", { command: "null" }, "reported, no message");
      add("wrong_type", { error: "E_BAD_REPLY", says: 'command() returned "not an object", not' }, "E_BAD_REPLY");
      add("unserializable", { error: "E_BAD_REPLY", says: "command() returned a value that cannot be written as JSON" }, "E_BAD_REPLY");
      add("big", { command: "big" }, "ok, whole");
      add("stdout", { command: "fine" }, "ok, text logged");
      add("stderr", { command: "fine" }, "ok, lines logged");
      break;
    case "stop":
      add("throw", { stopLog: `stop() failed: ${thrown}` }, "logged");
      add("reject", { stopLog: `stop() failed: ${thrown}` }, "logged");
      add("hang", { stopLog: "stop() did not answer within 1000 ms" }, "logged, killed");
      add("spin", { stopLog: "stop() did not answer within 1000 ms" }, "logged, killed");
      for (const f of ["undefined", "wrong_type", "unserializable", "big"] as const) add(f, { stopLog: null }, "ok (the value is not read)");
      add("stdout", { stopLog: null }, "ok, text logged");
      add("stderr", { stopLog: null }, "ok");
      break;
  }
  return rows;
}

export const MODULE_ROWS: ModuleRow[] = FUNCTIONS.flatMap(rowsFor);
