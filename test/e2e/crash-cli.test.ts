/**
 * A plugin's crash, as a user of the CLI and of the library sees it: about the plugin (the export
 * that crashed, the signal or exit code, the fault, its own last stderr lines), never the runtime's
 * crash banner or its bug-report link; the hint fits the caller.
 */
import { beforeAll, expect, test } from "bun:test";
import { approve, cli, fixture, openSession, refusal } from "../helpers.ts";

beforeAll(async () => {
  await approve(fixture("crash-in-invoke"));
});

test("the CLI: E_CRASHED, exit 5, the plugin's last line, no Bun banner, a hint for a one-shot run", async () => {
  const r = await cli(["invoke", fixture("crash-in-invoke"), "segfault"]);
  expect(r.code).toBe(5);
  const [first, ...rest] = r.stderr.trimEnd().split("\n");
  expect(first).toBe("error plugin 'crash-in-invoke' crashed (signal SIGSEGV) while cxagent_plugin_invoke of segfault was running (Segmentation fault at address 0x8); its last output:");
  expect(rest).toEqual([expect.stringMatching(/^ {2}\| crashing at \d+ us$/), "hint: the message ends with the last lines the plugin wrote; run again with --verbose to see everything it wrote"]);
  for (const banner of ["Bun has crashed", "bun.report", "not your code", "Bun v"]) expect(r.stderr).not.toContain(banner);
  const silent = await cli(["invoke", fixture("crash-in-invoke"), "abort", "--json"]);
  expect(silent.json().error).toMatchObject({
    code: "E_CRASHED",
    message: "plugin 'crash-in-invoke' crashed (signal SIGABRT) while cxagent_plugin_invoke of abort was running (abort() called)",
    hint: "the plugin wrote nothing to stderr before it crashed; run again with --verbose to see its logs",
    details: { signal: "SIGABRT", fault: "abort() called", stderr: [] },
  });
});

test("the library: the same message, and a hint about the session's next call", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("crash-in-invoke"));
  const error = await refusal(plugin.invoke("exit"));
  expect(error.code).toBe("E_CRASHED");
  expect(error.message).toBe("plugin 'crash-in-invoke' crashed (exit code 3) while cxagent_plugin_invoke of exit was running");
  expect(error.hint).toBe("the next call to it starts a fresh plugin host; what the plugin wrote may say why it crashed");
  expect((await plugin.invoke("fine")).success).toBe(true);
});
