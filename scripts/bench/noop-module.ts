/**
 * The TypeScript twin of test/fixtures/noop.c, for the benchmark: every call answers the same
 * small result. A module plugin (issue 19), copied with its sidecar into the bench's workspace.
 */
import { definePlugin } from "cxagent";

const ANSWER = { success: true, output: { content: "ok" } };

export default definePlugin({
  start() {},
  invoke: () => ANSWER,
  stop() {},
});
