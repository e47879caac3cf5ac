/**
 * TypeScript plugins (issue 19): a module made with definePlugin, run by its own plugin host
 * process, through the real boundary — the probe fixture (test/fixtures/modules/probe) and small
 * modules written here into temporary folders.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type CallEvent, CxError, type Session, type Submit } from "../../src/index.ts";
import { alive, openSession, refusal, ROOT, tempDir, until, within, writeModule } from "../helpers.ts";

const PROBE = join(ROOT, "test/fixtures/modules/probe");

const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").trim().split("\n") : []);

interface Watched {
  session: Session;
  logs: string[];
  output: string[];
}

async function watched(options: Parameters<typeof openSession>[0] = {}): Promise<Watched> {
  const logs: string[] = [];
  const output: string[] = [];
  const session = await openSession({ onLog: (_p, _l, text) => logs.push(text), onOutput: (_p, line) => output.push(line), permission: "once", ...options });
  return { session, logs, output };
}

const expectCode = (error: unknown, code: string) => {
  expect(error).toBeInstanceOf(CxError);
  expect((error as CxError).code as string).toBe(code);
  return error as CxError;
};

describe("a module plugin", () => {
  test("loads from <stem>.ts beside its sidecar, in a plugin host of its own, and answers", async () => {
    const { session, logs } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    expect(probe.library).toBe(join(PROBE, "probe.ts"));
    expect(probe.manifest.tools.map((t) => t.name)).toContain("echo");
    expect(probe.exports).toEqual(["poll", "command"]);
    expect(probe.pid).not.toBe(process.pid);
    expect(readFileSync(`/proc/${probe.pid}/cmdline`, "utf8").split("\0")).toContain("module");
    const r = await probe.invoke("echo", { text: "hi" });
    expect(r).toMatchObject({ success: true, output: { content: "echo: hi", args: { text: "hi" } } });
    expect(logs).toContain(`started in ${session.cwd} with {} for host contract 4`);
    expect(session.instructions()).toContain("The probe module's instructions.");
  });

  test("every report of a call reaches it before its reply, in order; a report after the reply is dropped", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE, { settings: { marker } });
    const events: CallEvent[] = [];
    const r = await probe.invoke("report", {}, { onEvent: (e) => events.push(e) });
    expect(r.output.content).toBe("reported");
    expect(events).toEqual([
      { event: "progress", percent: 50, text: "half" },
      { event: "log", level: 3, text: "careful" },
      { event: "log", level: 1, text: "numbered" },
      { event: "stream", text: "partial " },
      { event: "stream", text: "more" },
      { event: "progress", percent: 100, text: "" },
    ]);
    const late: CallEvent[] = [];
    expect((await probe.invoke("late", {}, { onEvent: (e) => late.push(e) })).output.content).toBe("early");
    await until(() => lines(marker).includes("late reports made"), 5000, "the late reports");
    // a call after them: had any late report been sent, it would have arrived before this reply
    await probe.invoke("echo");
    expect(late).toEqual([]);
  });

  test("calls run concurrently: two calls that wait for each other both return; a gate answers while they wait", async () => {
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    const first = probe.invoke("rendezvous", { n: 2 });
    const decision = await within(probe.gate("asks", { ask: "now" }), 5000, "a gate while an invoke waits");
    expect(decision).toMatchObject({ ask: true, display: "asks: now", alwaysOffered: false, source: "gate" });
    const second = probe.invoke("rendezvous", { n: 2 });
    const both = await within(Promise.all([first, second]), 10_000, "two calls that meet");
    expect(both.map((r) => r.output.content)).toEqual(["met 2", "met 2"]);
  });

  test("more calls at once than a native plugin's pool holds: 16 calls waiting for a 17th do not make it busy", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const { session } = await watched({ stuckMs: 0 }); // every call out counts as stuck at once
    await using _ = session;
    const probe = await session.load(PROBE, { settings: { marker } });
    const waiting = Array.from({ length: 16 }, () => probe.invoke("rendezvous", { n: 17 }));
    await until(() => lines(marker).length === 16, 10_000, "16 calls inside the plugin");
    const all = await within(Promise.all([...waiting, probe.invoke("rendezvous", { n: 17 })]), 10_000, "17 calls that meet");
    expect(new Set(all.map((r) => r.output.content))).toEqual(new Set(["met 17"]));
  });

  test("an Always grant for a module's tool is stored and holds for the next call, as for a native plugin's", async () => {
    using dir = tempDir();
    const { session } = await watched({ cwd: dir.path, stateDir: join(dir.path, "state") });
    await using _ = session;
    const probe = await session.load(PROBE);
    expect(await probe.gate("always")).toMatchObject({ ask: true, alwaysOffered: true, granted: false, rule: "plugin probe tool always" });
    expect((await probe.invoke("always", {}, { permission: "always" })).output.content).toBe("always ran");
    expect(await probe.gate("always")).toMatchObject({ ask: true, granted: true });
    expect((await probe.invoke("always")).output.content).toBe("always ran"); // no one to ask, and no need
  });

  test("cancellation reaches the call: its signal aborts with the reason, and the plugin goes on", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE, { settings: { marker } });
    const controller = new AbortController();
    const waiting = probe.invoke("wait", {}, { signal: controller.signal });
    await Bun.sleep(0);
    controller.abort();
    expectCode(await waiting.catch((e) => e), "E_CANCELLED");
    await until(() => lines(marker).some((l) => l.endsWith(": cxagent abandoned the call: its caller cancelled it")), 5000, "the cancellation in the plugin");
    expectCode(await probe.invoke("wait", {}, { timeoutMs: 50 }).catch((e) => e), "E_TIMEOUT");
    await until(() => lines(marker).some((l) => l.endsWith(": cxagent abandoned the call: its deadline passed")), 5000, "the deadline in the plugin");
    expect((await probe.invoke("echo", { text: "after" })).output.content).toBe("echo: after");
  });

  test("a thrown error or a rejected promise fails that call, with its message, and nothing else", async () => {
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    const pid = probe.pid;
    const thrown = expectCode(await probe.invoke("fail").catch((e) => e), "E_PLUGIN_FAILED");
    expect(thrown.message).toBe("plugin 'probe': fail failed: it failed on purpose");
    const rejected = expectCode(await probe.invoke("reject").catch((e) => e), "E_PLUGIN_FAILED");
    expect(rejected.message).toBe("plugin 'probe': reject failed: a bare string");
    expect((await probe.invoke("echo", { text: "still" })).output.content).toBe("echo: still");
    expect(probe.pid).toBe(pid);
  });

  test("process.exit and a crash cost the calls in flight, and the next call starts a new plugin host", async () => {
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    const first = probe.pid!;
    const inFlight = probe.invoke("wait");
    const exited = expectCode(await probe.invoke("exit").catch((e) => e), "E_CRASHED");
    expect(exited.message).toContain("crashed (exit code 3) while invoke() of exit was running");
    expect(expectCode(await inFlight.catch((e) => e), "E_CRASHED").message).toContain("while invoke() of wait was running");
    expect((await probe.invoke("echo", { text: "again" })).output.content).toBe("echo: again");
    expect(probe.pid).not.toBe(first);
    const crashed = expectCode(await probe.invoke("crash").catch((e) => e), "E_CRASHED");
    expect(crashed.message).toContain("crashed (signal SIGSEGV) while invoke() of crash was running");
    expect((await probe.invoke("echo", { text: "once more" })).output.content).toBe("echo: once more");
  });

  // Bun keeps a copy of fd 1 for process.stdout from the moment the stream is first touched. The
  // second case touches it before the plugin host moves fd 1 away from the protocol (a preload,
  // through BUN_OPTIONS in the host's environment): the host must still seal the protocol.
  test.each([
    ["the host as it starts", {}],
    ["process.stdout touched before the host moves fd 1", { BUN_OPTIONS: `--preload=${join(ROOT, "test/fixtures/preload-touch-stdout.ts")}` }],
  ])("console output and process.stdout never reach the protocol, %s: they arrive as the plugin's output", async (_what, env) => {
    const { session, logs, output } = await watched({ env });
    await using _ = session;
    const probe = await session.load(PROBE);
    expect((await probe.invoke("noisy")).output.content).toBe("noisy");
    const expected = ["top-level console.log", "top-level stdout write", "console.log in a call", "console.info in a call", "console.error in a call", "process.stdout.write in a call", "Bun.write(Bun.stdout) in a call"];
    await until(() => expected.every((l) => output.includes(l)), 5000, "every line as output");
    expect(logs.filter((l) => l.includes("not JSON"))).toEqual([]);
  });

  test("registerChild: a descendant is recorded and ended with the plugin; pid 1 is refused, pid <= 0 ignored", async () => {
    const { session, logs } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    const r = await probe.invoke("spawn");
    const child = r.output.pid as number;
    expect(alive(child)).toBe(true);
    expect(logs.some((l) => l.startsWith("register_child(1) was refused:"))).toBe(true);
    expect(logs.some((l) => l.includes("register_child(-5)"))).toBe(false);
    await session.unload("probe");
    await until(() => !alive(child), 10_000, "the registered child to be ended with the plugin");
  });

  test("start and every call get the context: working directory, settings, host contract, and the call's id", async () => {
    const { session } = await watched();
    await using _ = session;
    const settings = JSON.parse('{"precision":3,"__proto__":{"x":1}}');
    const probe = await session.load(PROBE, { settings });
    const r = await probe.invoke("context");
    expect(r.output.workingDirectory).toBe(session.cwd);
    expect(r.output.settings).toEqual(settings);
    expect(Object.keys(r.output.settings as object)).toEqual(["precision", "__proto__"]);
    expect(r.output.hostContract).toBe(4);
    expect(r.output.id).toBeGreaterThan(0);
  });

  test("gates: the module narrows a dynamic tool; a gate that throws or hangs is a failed gate, and its signal aborts", async () => {
    const { session } = await watched({ gateMs: 200 });
    await using _ = session;
    const probe = await session.load(PROBE);
    expect(await probe.gate("asks", {})).toMatchObject({ ask: false, source: "gate" });
    expect(await probe.gate("asks", { ask: "x" })).toMatchObject({ ask: true, display: "asks: x", alwaysOffered: false });
    const thrown = await probe.gate("asks", { mode: "throw" });
    expect(thrown).toMatchObject({ ask: true, source: "gate-failed", alwaysOffered: false });
    expect(thrown.display).toContain("the gate broke");
    const hung = await probe.gate("asks", { mode: "hang" });
    expect(hung).toMatchObject({ ask: true, source: "gate-failed" });
    expect(hung.display).toContain("it took longer than 200 ms");
    expect(await probe.gate("always", {})).toMatchObject({ ask: true, source: "manifest" });
    // permission is decided as for a native plugin: denied by policy without anyone to ask
    const denied = await probe.invoke("always", {}, { permission: "deny" });
    expect(denied).toMatchObject({ permissionDenied: true, decidedBy: "user" });
    expect((await probe.invoke("asks", {})).output.content).toBe("asks ran");
  });

  test("commands run with reports; poll submits reach the session", async () => {
    const { session } = await watched({ pollMs: 20 });
    await using _ = session;
    const probe = await session.load(PROBE, { settings: { submit: "run the tests" } });
    const submits: Submit[] = [];
    probe.onSubmit((s) => submits.push(s));
    const events: CallEvent[] = [];
    expect(await probe.command("greet", "Ada", { onEvent: (e) => events.push(e) })).toEqual({ message: "hello, Ada", status: "reported" });
    expect(events).toEqual([{ event: "progress", percent: 10, text: "greeting" }]);
    await until(() => submits.length > 0, 30_000, "the submit"); // polled every 20 ms; 5 s was too little at load 20
    expect(submits).toEqual([{ plugin: "probe", goal: "run the tests", wantResult: false }]);
  });

  test("answers JSON cannot carry, and a result that is not an object, fail that call as E_BAD_REPLY", async () => {
    const { session } = await watched();
    await using _ = session;
    const probe = await session.load(PROBE);
    const big = expectCode(await probe.invoke("unjsonable").catch((e) => e), "E_BAD_REPLY");
    expect(big.message).toContain("invoke() returned a value that cannot be written as JSON");
    const text = expectCode(await probe.invoke("not_object").catch((e) => e), "E_BAD_REPLY");
    expect(text.message).toContain('invoke() returned the string "just text", not a JobResult object');
    expect((await probe.invoke("echo")).success).toBe(true);
  });
});

describe("what a module must export and declare", () => {
  const cases: [string, string, Record<string, unknown>, string, string][] = [
    ["no-default", `export const x = 1;`, {}, "E_LOAD", "no-default.ts must default-export its plugin, made with definePlugin"],
    ["missing", `export default { invoke() { return {}; } };`, {}, "E_LOAD", "it has no start, stop functions"],
    ["not-function", `export default { start() {}, invoke() { return {}; }, stop() {}, gate: 3 };`, {}, "E_LOAD", "gate is not a function"],
    ["throws-at-top", `throw new Error("top-level trouble");`, {}, "E_LOAD", "importing throws-at-top.ts failed: top-level trouble"],
    ["syntax", `export default {`, {}, "E_LOAD", "importing syntax.ts failed"],
    ["client", `export default { start() {}, invoke() { return {}; }, stop() {} };`, { client: true }, "E_MANIFEST", "declares client: true but the module has no poll function"],
    ["dynamic", `export default { start() {}, invoke() { return {}; }, stop() {} };`, { tools: [{ name: "work", gated: "dynamic" }] }, "E_MANIFEST", `the manifest gates 'work' "dynamic", but the module has no gate function`],
    ["differs", `export default { describe: () => ({ pluginContract: 4, name: "differs", version: "2.0.0", tools: [{ name: "work" }] }), start() {}, invoke() { return {}; }, stop() {} };`, {}, "E_MISMATCH", 'the sidecar declares version="1.0.0", describe returned version="2.0.0"'],
    ["bad-describe", `export default { describe: () => ({ name: "x" }), start() {}, invoke() { return {}; }, stop() {} };`, {}, "E_MANIFEST", "the manifest from describe() has"],
  ];
  test.each(cases)("%s: refused (%s)", async (name, code, manifest, errorCode, says) => {
    using dir = tempDir();
    const folder = writeModule(dir.path, name, code, manifest);
    const { session } = await watched();
    await using _ = session;
    const error = await refusal(session.load(folder));
    expect(error.code as string).toBe(errorCode);
    expect(error.message).toContain(says);
    expect(session.plugins).toEqual([]);
  });

  test("start that throws fails the load with its message; the sidecar alone is the manifest without describe", async () => {
    using dir = tempDir();
    const folder = writeModule(dir.path, "no-start", `export default { start() { throw new Error("no database"); }, invoke() { return {}; }, stop() {} };`);
    const { session } = await watched();
    await using _ = session;
    const error = await refusal(session.load(folder));
    expect(error.code).toBe("E_PLUGIN_FAILED");
    expect(error.message).toBe("plugin 'no-start' failed to start: no database");
  });

  test("a .js or .mjs module works the same; the module beside a sidecar is found by discovery", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "plugins");
    writeModule(plugins, "plain-js", `export default { start() {}, invoke: (tool, args) => ({ success: true, output: { content: "js " + args.x } }), stop() {} };`, {}, ".js");
    writeModule(plugins, "plain-mjs", `export default { start() {}, invoke: (tool, args) => ({ success: true, output: { content: "mjs " + args.x } }), stop() {} };`, { tools: [{ name: "work2" }] }, ".mjs");
    const { session } = await watched({ cwd: dir.path });
    await using _ = session;
    const js = await session.load(join(plugins, "plain-js"));
    expect((await js.invoke("work", { x: 1 })).output.content).toBe("js 1");
    const mjs = await session.load(join(plugins, "plain-mjs", "plain-mjs.plugin.json"));
    expect((await mjs.invoke("work2", { x: 2 })).output.content).toBe("mjs 2");
    expect(session.inspect(join(plugins, "plain-mjs")).location.kind).toBe("module");
  });

  test("its tool names collide with a native plugin's as any plugin's do", async () => {
    const { session } = await watched();
    await using _ = session;
    await session.load(join(ROOT, "examples/calculator"));
    const error = await refusal(session.load(join(ROOT, "examples/calculator-ts")));
    expect(error.code).toBe("E_COLLISION");
    expect(error.message).toBe("plugin 'calculator-ts' was refused: its tool 'calc_add' is already held by plugin 'calculator'");
  });
});
