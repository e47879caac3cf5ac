/**
 * plugin-host/process.ts's answerOf alone: how a Cortex process tool's call ended (process-run.ts's
 * outcome) becomes its result, or a failed call naming what was wrong. The processes behind these
 * outcomes are driven for real in process-run.test.ts and cortex-process.test.ts.
 */
import { expect, test } from "bun:test";
import { answerOf } from "../../src/plugin-host/process.ts";
import type { ProcessTool } from "../../src/protocol/cortex-process.ts";
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE } from "../../src/protocol/sandbox-policy.ts";
import type { ToolOutcome } from "../../src/plugin-host/process-run.ts";

const TOOL: ProcessTool = { name: "t", description: "d", command: "run.sh", args: [], inherit_env: ["PATH"], env: {}, input_schema: { type: "object" }, max_output_bytes: 100, effects: [] };
const call = { signal: new AbortController().signal };
const ANSWER = 'it must write a JSON string, or {"output": string, "is_error": boolean}';
const b = (s: string) => Buffer.from(s);
const ok = (stdout: string | Buffer, stderr = "") => answerOf(TOOL, { end: "exited", status: 0, stdout: typeof stdout === "string" ? b(stdout) : stdout, stderr: b(stderr) }, call);
const fails = (outcome: ToolOutcome, tool: ProcessTool = TOOL, c = call) => {
  try {
    answerOf(tool, outcome, c);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("answered");
};
const failsOn = (stdout: string) => fails({ end: "exited", status: 0, stdout: b(stdout), stderr: b("") });

test("a JSON string, or {output, is_error, media}: the result", () => {
  expect(ok('"hi"\n')).toEqual({ success: true, output: { content: "hi" } });
  expect(ok('{"output": "fine"}')).toEqual({ success: true, output: { content: "fine" } });
  expect(ok('{"output": "fine", "is_error": false}')).toEqual({ success: true, output: { content: "fine" } });
  expect(ok('{"output": "bad", "is_error": true}')).toEqual({ success: false, errorMessage: "bad", output: { content: "bad" } });
  expect(ok('{"output": "pic", "media": [{"path": "a.png"}]}')).toEqual({ success: true, output: { content: "pic", media: [{ path: "a.png" }] } });
});

test("a non-zero exit: a failed result with its trimmed stderr, or its status", () => {
  expect(answerOf(TOOL, { end: "exited", status: 3, stdout: b('"ignored"'), stderr: b("  cannot do that \n") }, call)).toEqual({ success: false, exitCode: 3, errorMessage: "cannot do that", output: { content: "" } });
  expect(answerOf(TOOL, { end: "exited", status: 4, stdout: b(""), stderr: b(" \n") }, call)).toEqual({ success: false, exitCode: 4, errorMessage: "exited with status 4", output: { content: "" } });
});

test("every malformed answer fails the call, naming what was wrong", () => {
  const who = "tool 't' (run.sh)";
  expect(fails({ end: "exited", status: 0, stdout: Buffer.from([0x22, 0xff, 0x22]), stderr: b("") })).toBe(`${who} wrote bytes on stdout that are not UTF-8; ${ANSWER}`);
  expect(failsOn(" \n")).toBe(`${who} exited without writing an answer on stdout; ${ANSWER}`);
  expect(fails({ end: "exited", status: 0, stdout: b(""), stderr: b(" why \n") })).toBe(`${who} exited without writing an answer on stdout; ${ANSWER}; its stderr: why`);
  expect(failsOn("nope")).toMatch(/^tool 't' \(run\.sh\) wrote on stdout what is not JSON \(.+\): nope; it must write/);
  expect(failsOn("[1]")).toBe(`${who} answered an array; ${ANSWER}`);
  expect(failsOn("null")).toBe(`${who} answered null; ${ANSWER}`);
  expect(failsOn("42")).toBe(`${who} answered number; ${ANSWER}`);
  expect(failsOn("{}")).toBe(`${who} answered an object whose "output" is missing; ${ANSWER}`);
  expect(failsOn('{"output": 42}')).toBe(`${who} answered an object whose "output" is not a string (42); ${ANSWER}`);
  expect(failsOn(`{"output": ["${"x".repeat(60)}"]}`)).toBe(`${who} answered an object whose "output" is not a string (["${"x".repeat(38)}…); ${ANSWER}`);
  expect(failsOn('{"output": "o", "is_error": "yes"}')).toBe(`${who} answered an object whose "is_error" is not a boolean; ${ANSWER}`);
  expect(failsOn('{"output": "o", "media": {}}')).toBe(`${who} answered an object whose "media" is not an array; ${ANSWER}`);
  expect(failsOn('{"is_error": 1, "media": 2}')).toBe(`${who} answered an object whose "output" is missing and "is_error" is not a boolean and "media" is not an array; ${ANSWER}`);
});

test("how the process ended, when it did not answer: each named", () => {
  const who = "tool 't' (run.sh)";
  expect(fails({ end: "not-started", message: "ENOENT" })).toBe(`${who} could not be started: ENOENT`);
  expect(fails({ end: "cancelled" })).toBe(`${who} was cancelled`);
  const controller = new AbortController();
  const reason = new Error("the client cancelled");
  controller.abort(reason);
  expect(() => answerOf(TOOL, { end: "cancelled" }, { signal: controller.signal })).toThrow(reason);
  const aborted = new AbortController();
  aborted.abort("not an error");
  expect(fails({ end: "cancelled" }, TOOL, { signal: aborted.signal })).toBe(`${who} was cancelled`);
  expect(fails({ end: "timeout", stderr: b("") }, { ...TOOL, timeout_secs: 2 })).toBe(`${who} timed out after 2 s (its timeout_secs); its process group was ended`);
  expect(fails({ end: "timeout", stderr: b("slow\n") }, { ...TOOL, timeout_secs: 2 })).toBe(`${who} timed out after 2 s (its timeout_secs); its process group was ended; its stderr: slow`);
  expect(fails({ end: "too-much", bytes: 101 })).toBe(`${who} wrote more than 100 bytes on stdout and stderr (its max_output_bytes); its process group was ended`);
  expect(fails({ end: "refused", why: "no landlock" })).toBe(`${who} was not run: no landlock`);
  expect(fails({ end: "limit", which: "AS", stderr: b("") })).toBe(`${who} was not run: its max_memory_bytes (RLIMIT_AS) could not be set here, and a limit that cannot be applied refuses the call`);
  expect(fails({ end: "limit", which: "CPU", stderr: b("") })).toBe(`${who} was not run: its max_cpu_secs (RLIMIT_CPU) could not be set here, and a limit that cannot be applied refuses the call`);
  expect(fails({ end: "signal", signal: "SIGTERM", stderr: b("bye\n") })).toBe(`${who} was killed by SIGTERM; its stderr: bye`);
});

test("a signal is tied to the limit it may mean, and only then", () => {
  const cpu = { ...TOOL, max_cpu_secs: 3 };
  const mem = { ...TOOL, max_memory_bytes: 4096 };
  const killed = (tool: ProcessTool, signal: string) => fails({ end: "signal", signal, stderr: b("") }, tool);
  for (const s of ["SIGXCPU", "SIGKILL"]) expect(killed(cpu, s)).toBe(`tool 't' (run.sh) was killed by ${s} (past its max_cpu_secs, 3 s of CPU: RLIMIT_CPU)`);
  for (const s of ["SIGSEGV", "SIGABRT", "SIGBUS"]) expect(killed(mem, s)).toBe(`tool 't' (run.sh) was killed by ${s} (perhaps short of memory under its max_memory_bytes, 4096 bytes: RLIMIT_AS)`);
  for (const s of ["SIGSEGV", "SIGTERM"]) expect(killed(cpu, s)).toBe(`tool 't' (run.sh) was killed by ${s}`);
  for (const s of ["SIGKILL", "SIGTERM"]) expect(killed(mem, s)).toBe(`tool 't' (run.sh) was killed by ${s}`);
  for (const s of ["SIGXCPU", "SIGSEGV"]) expect(killed(TOOL, s)).toBe(`tool 't' (run.sh) was killed by ${s}`);
});

test("the sandbox launcher's refusal fails the call, naming the layer; its exit status alone does not", () => {
  const line = `${SANDBOX_REFUSED_LINE}${JSON.stringify({ layer: "landlock", why: "ABI 0" })}`;
  expect(fails({ end: "exited", status: SANDBOX_REFUSED_EXIT, stdout: b(""), stderr: b(line) })).toBe("tool 't' (run.sh) was not run: its sandbox's landlock layer could not be applied (ABI 0), and a protection that cannot be applied refuses the call");
  expect(answerOf(TOOL, { end: "exited", status: SANDBOX_REFUSED_EXIT, stdout: b(""), stderr: b("own error") }, call)).toMatchObject({ success: false, exitCode: SANDBOX_REFUSED_EXIT, errorMessage: "own error" });
});
