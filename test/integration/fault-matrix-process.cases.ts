/**
 * The fault matrix of a Cortex process plugin: one row per way a tool's process can answer
 * wrongly, driven through the project's own fixture (test/fixtures/cortex-process/tool.sh, its
 * input's "fault" choosing), and what cxagent does about each. fault-matrix-process.test.ts drives
 * every row; scripts/fault-table.ts --process prints the README's table from it.
 */
export interface ProcessRow {
  fault: string;
  /** The misbehaviour, as the table names it. */
  name: string;
  /** The call's outcome: a result (success or not), or the failed call's error code, and what its message says. */
  expected: { success: boolean; content?: string; errorMessage?: string } | { error: string; says: string };
  /** The outcome as the table words it. */
  outcome: string;
}

const ANSWER = 'it must write a JSON string, or {"output": string, "is_error": boolean}';

export const PROCESS_ROWS: readonly ProcessRow[] = [
  { fault: "ok", name: "a JSON object {output}", expected: { success: true }, outcome: "success" },
  { fault: "is_error", name: "{output, is_error: true}", expected: { success: false, errorMessage: "it went wrong" }, outcome: "success: false (`output` is the error)" },
  { fault: "status", name: "exit 3, a line on stderr", expected: { success: false, errorMessage: "cannot do that" }, outcome: "success: false, the trimmed stderr" },
  { fault: "status_quiet", name: "exit 4, nothing on stderr", expected: { success: false, errorMessage: "exited with status 4" }, outcome: "success: false, \"exited with status 4\"" },
  { fault: "not_json", name: "not JSON", expected: { error: "E_PLUGIN_FAILED", says: `wrote on stdout what is not JSON` }, outcome: "E_PLUGIN_FAILED: not JSON, with a preview" },
  { fault: "wrong_shape", name: "{output: 42}", expected: { error: "E_PLUGIN_FAILED", says: `answered an object whose "output" is not a string (42); ${ANSWER}` }, outcome: "E_PLUGIN_FAILED naming the member" },
  { fault: "array", name: "a JSON array", expected: { error: "E_PLUGIN_FAILED", says: `answered an array; ${ANSWER}` }, outcome: "E_PLUGIN_FAILED naming what it answered" },
  { fault: "bad_utf8", name: "invalid UTF-8", expected: { error: "E_PLUGIN_FAILED", says: "wrote bytes on stdout that are not UTF-8" }, outcome: "E_PLUGIN_FAILED: not UTF-8" },
  { fault: "huge", name: "300 KB past a 256 KiB max_output_bytes", expected: { error: "E_PLUGIN_FAILED", says: "wrote more than 262144 bytes on stdout and stderr (its max_output_bytes); its process group was ended" }, outcome: "E_PLUGIN_FAILED as the cap is passed, its group ended" },
  { fault: "silent", name: "exit 0, nothing on stdout", expected: { error: "E_PLUGIN_FAILED", says: `exited without writing an answer on stdout; ${ANSWER}` }, outcome: "E_PLUGIN_FAILED: no answer" },
  { fault: "signal", name: "killed by SIGSEGV", expected: { error: "E_PLUGIN_FAILED", says: "was killed by SIGSEGV" }, outcome: "E_PLUGIN_FAILED naming the signal" },
  { fault: "hang", name: "hangs past timeout_secs (2 s)", expected: { error: "E_PLUGIN_FAILED", says: "timed out after 2 s (its timeout_secs); its process group was ended; its stderr: sleeping " }, outcome: "E_PLUGIN_FAILED at its timeout, its whole group ended" },
  { fault: "stderr_flood", name: "200 KB on stderr, then an answer", expected: { success: true, content: "survived the flood" }, outcome: "success (read as it comes: no pipe stalls)" },
  { fault: "orphan", name: "leaves a process behind", expected: { success: true, content: "left one behind" }, outcome: "success; what it left is ended with the call's group" },
];
