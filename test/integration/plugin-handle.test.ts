/**
 * host/plugin.ts, the handle a session gives for a loaded plugin, branch by branch, with one small
 * module plugin written here (a real plugin host each, the quickest kind to start): what it refuses
 * before anything is sent, a dynamic gate's every answer, permission and cancellation, deadlines,
 * restarts, crashes and quarantine, stop, and a start that fails. Fast enough to run against each
 * of plugin.ts's generated mutants (npm run mutants); the native plugins' versions of these are in
 * gate.test.ts, resilience.test.ts and plugin-change.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CxError, PermissionRequest, PluginChange, SessionOptions } from "../../src/index.ts";
import { CRASH_BUDGET } from "../../src/host/plugin.ts";
import { alive, hostsOf, openSession, refusal, tempDir, until, within, writeModule } from "../helpers.ts";

const CODE = `import { appendFileSync } from "node:fs";
import { definePlugin } from "cxagent";
let settings = {};
let invokes = 0;
const waiting = [];
// (the marker from the settings, or before start from the environment)
const mark = (text) => { const marker = settings.marker ?? process.env.CXAGENT_FX_MARKER; if (marker) appendFileSync(marker, text + "\\n"); };
export default definePlugin({
  start(ctx) {
    settings = ctx.settings;
    if (settings.failStart) throw new Error("start refused on purpose");
    if (settings.hangStart) return new Promise(() => {});
  },
  async invoke(tool, args, call) {
    if (args.exit) process.exit(args.exit); // (first: a leased host may not write the marker)
    invokes++;
    mark("invoke " + tool);
    if (tool === "sleep") await new Promise((resolve) => setTimeout(resolve, args.ms));
    if (tool === "exit") process.exit(args.code);
    if (tool === "exit_after") setTimeout(() => process.exit(5), 20);
    if (tool === "kill_after") setTimeout(() => process.kill(process.pid, "SIGKILL"), 20);
    return { success: true, output: { content: tool + " ran", invokes, args } };
  },
  async gate(tool, args, ctx) {
    if (args.mode === "lease") return { display: "leased", sandbox: { fs: { write: [args.path] } } };
    if (args.mode === "ask") return { display: "asks: " + args.why, alwaysAskable: true };
    if (args.mode === "throw") throw new Error("the gate broke");
    if (args.mode === "hang") return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
    if (args.mode === "exit") {
      console.error("the gate's last words");
      await new Promise((resolve) => setTimeout(resolve, 50));
      process.exit(7);
    }
    return null;
  },
  async command(name, text) {
    if (text === "meet") {
      // returns once two commands are in at the same time
      await new Promise((resolve) => { waiting.push(resolve); if (waiting.length === 2) for (const wake of waiting) wake(); });
    }
    return { message: name + ": [" + text + "]", status: "reported" };
  },
  poll() {
    const goal = (settings.submits ?? []).shift();
    return goal === undefined ? null : { goal };
  },
  stop() {
    mark("stopped");
    if (settings.failStop) throw new Error("stop refused on purpose");
    if (settings.hangStop) return new Promise(() => {});
  },
});
`;
const MANIFEST = {
  tools: [{ name: "work" }, { name: "checked", gated: true }, { name: "dyn", gated: "dynamic" }, { name: "sleep" }, { name: "exit" }, { name: "exit_after" }, { name: "kill_after" }, { name: "typed", inputSchema: { type: "object", properties: { n: { type: "integer" } } } }, { name: "hidden_one" }],
  client: true,
  commands: [{ name: "say", summary: "Says." }, { name: "shout", summary: "Says louder." }],
};

const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").trim().split("\n") : []);

/** A session with the module `handle` loaded (settings as given), its log lines as "level text". */
async function loaded(dir: string, options: SessionOptions = {}, settings: Record<string, unknown> = {}, load: { tools?: { deny?: string[]; ask?: string[] } } = {}) {
  const folder = writeModule(dir, "handle", CODE, MANIFEST, ".js");
  const logs: string[] = [];
  const marker = join(dir, "marker");
  const session = await openSession({ onLog: (_p, level, text) => logs.push(`${level} ${text}`), ...options });
  const plugin = await session.load(folder, { settings: { marker, ...settings }, ...load });
  return { session, plugin, logs, marker, folder };
}

describe("refused before anything is sent", () => {
  test("an unknown or hidden tool, an unknown command: named, with what there is", async () => {
    using dir = tempDir();
    const { session, plugin, marker } = await loaded(dir.path, {}, {}, { tools: { deny: ["hidden_*"] } });
    await using _ = session;
    expect(plugin.tools.map((t) => t.name)).toEqual(["work", "checked", "dyn", "sleep", "exit", "exit_after", "kill_after", "typed"]);
    expect(plugin.manifest.tools).toHaveLength(9);
    const unknown = await refusal(plugin.invoke("wrok"));
    expect(unknown.code).toBe("E_UNKNOWN_TOOL");
    expect(unknown.message).toBe("plugin 'handle' has no tool 'wrok'; did you mean 'work'?");
    expect(unknown.hint).toBe("its tools: work, checked, dyn, sleep, exit, exit_after, kill_after, typed");
    expect((await refusal(plugin.gate("nothing"))).code).toBe("E_UNKNOWN_TOOL");
    expect((await refusal(plugin.invoke("hidden_one"))).code).toBe("E_TOOL_HIDDEN");
    expect((await refusal(plugin.gate("hidden_one"))).code).toBe("E_TOOL_HIDDEN");
    const command = await refusal(plugin.command("sya"));
    expect(command.code).toBe("E_UNKNOWN_COMMAND");
    expect(command.message).toBe("plugin 'handle' declares no command 'sya'; did you mean 'say'?");
    expect(command.hint).toBe("its commands: say, shout");
    expect(lines(marker)).toEqual([]);
    // what it is: a module, no sandbox, no warnings, its commands export
    expect([plugin.kind, plugin.sandboxLayers, plugin.warnings, plugin.exports, plugin.about, plugin.deadlineOf("work")]).toEqual(["module", null, [], ["poll", "command"], null, null]);
    expect(plugin.timings.startedAt).toBeGreaterThanOrEqual(plugin.timings.acceptedAt);
    expect(plugin.timings.acceptedAt).toBeGreaterThan(0);
  });

  test("with every tool hidden and no commands: 'none'", async () => {
    using dir = tempDir();
    const { session, plugin } = await loaded(dir.path, {}, {}, { tools: { deny: ["*"] } });
    await using _ = session;
    expect(plugin.tools).toEqual([]);
    expect((await refusal(plugin.invoke("work"))).code).toBe("E_TOOL_HIDDEN");
    expect((await refusal(plugin.invoke("x"))).hint).toBe("its tools: none");
    const bare = writeModule(dir.path, "bare", `import { definePlugin } from "cxagent";\nexport default definePlugin({ start() {}, invoke() { return { success: true, output: {} }; }, stop() {} });`, { tools: [{ name: "only" }] });
    const plugin2 = await session.load(bare);
    expect((await refusal(plugin2.command("x"))).hint).toBe("its commands: none");
    expect(plugin2.exports).toEqual([]);
  });
});

describe("a dynamic gate", () => {
  test("each answer: a question, none, a failure, past its deadline, a crash; then the next call works", async () => {
    using dir = tempDir();
    const { session, plugin } = await loaded(dir.path, { gateMs: 300 });
    await using _ = session;
    expect(await plugin.gate("dyn", { mode: "ask", why: "because" })).toMatchObject({ ask: true, display: "asks: because", alwaysOffered: true, source: "gate" });
    expect(await plugin.gate("dyn", { mode: "none" })).toMatchObject({ ask: false, display: null, source: "gate" });
    const broke = await plugin.gate("dyn", { mode: "throw" });
    expect(broke).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
    expect(broke.display).toContain("the gate broke");
    const late = await plugin.gate("dyn", { mode: "hang" });
    expect(late).toMatchObject({ ask: true, source: "gate-failed" });
    expect(late.display).toContain("it took longer than 300 ms");
    const first = plugin.pid;
    const crashed = await plugin.gate("dyn", { mode: "exit" });
    expect(crashed).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
    expect(crashed.display).toContain("the plugin crashed: plugin 'handle' crashed (exit code 7)");
    // its first line: not the plugin's last output
    expect(crashed.display).not.toContain("last words");
    expect((await plugin.invoke("work")).output.invokes).toBe(1);
    expect(plugin.pid).not.toBe(first);
  });
});

describe("permission", () => {
  test("asked for a gated tool, or one the policy makes ask; never for the others; a denial never reaches the plugin", async () => {
    using dir = tempDir();
    const { session, plugin, marker } = await loaded(dir.path, {}, {}, { tools: { ask: ["sleep"] } });
    await using _ = session;
    const asked: string[] = [];
    const ask = (answer: "once" | "deny") => (r: PermissionRequest) => (asked.push(r.tool), answer);
    expect(await plugin.invoke("checked", {}, { permission: ask("deny") })).toMatchObject({ success: false, permissionDenied: true });
    expect(await plugin.invoke("checked")).toMatchObject({ success: false, permissionDenied: true, decidedBy: "policy" });
    expect((await plugin.invoke("checked", {}, { permission: ask("once") })).output.content).toBe("checked ran");
    expect((await plugin.invoke("sleep", { ms: 1 }, { permission: ask("once") })).output.content).toBe("sleep ran");
    expect(await plugin.invoke("sleep", { ms: 1 })).toMatchObject({ success: false, permissionDenied: true });
    expect((await plugin.invoke("work", {}, { permission: ask("deny") })).output.content).toBe("work ran");
    expect(await plugin.invoke("dyn", { mode: "ask", why: "w" }, { permission: ask("deny") })).toMatchObject({ success: false, permissionDenied: true });
    expect((await plugin.invoke("dyn", { mode: "none" }, { permission: ask("deny") })).output.content).toBe("dyn ran");
    expect(asked).toEqual(["checked", "checked", "sleep", "dyn"]);
    expect(lines(marker)).toEqual(["invoke checked", "invoke sleep", "invoke work", "invoke dyn"]);
  });

  test("the session's answer decides a call that names none; the call's own answer comes first", async () => {
    using dir = tempDir();
    const { session, plugin } = await loaded(dir.path, { permission: "once" });
    await using _ = session;
    expect((await plugin.invoke("checked")).output.content).toBe("checked ran");
    expect(await plugin.invoke("checked", {}, { permission: "deny" })).toMatchObject({ success: false, permissionDenied: true });
  });

  test("a call cancelled while its permission is asked never starts, whatever the answer; one cancelled before never asks", async () => {
    using dir = tempDir();
    const { session, plugin, marker } = await loaded(dir.path);
    await using _ = session;
    const controller = new AbortController();
    const error = await refusal(
      plugin.invoke("checked", {}, {
        signal: controller.signal,
        permission: () => {
          controller.abort();
          return "once";
        },
      }),
    );
    expect(error.code).toBe("E_CANCELLED");
    expect(error.message).toBe("plugin 'handle': checked was cancelled before it started");
    const before = await refusal(plugin.invoke("work", {}, { signal: AbortSignal.abort() }));
    expect(before.message).toBe("plugin 'handle': work was cancelled before it started");
    expect((await plugin.invoke("work")).output.invokes).toBe(1);
    expect(lines(marker)).toEqual(["invoke work"]);
  });
});

describe("deadlines and commands", () => {
  test("a call past its deadline fails with E_TIMEOUT; commands of contract 4 run at once, their text trimmed", async () => {
    using dir = tempDir();
    const { session, plugin } = await loaded(dir.path);
    await using _ = session;
    expect((await refusal(plugin.invoke("sleep", { ms: 5000 }, { timeoutMs: 100 }))).code).toBe("E_TIMEOUT");
    expect((await plugin.command("say", "  hi  ")).message).toBe("say: [hi]");
    expect((await plugin.command("shout")).message).toBe("shout: []");
    const both = await within(Promise.all([plugin.command("say", "meet"), plugin.command("say", "meet")]), 10_000, "two commands that meet");
    expect(both.map((r) => r.message)).toEqual(["say: [meet]", "say: [meet]"]);
  });
});

describe("what it measures, coerces and refuses to pass on", () => {
  test("a call's duration, measured when the plugin gives none; a coerced argument, logged; a redaction marker sent back, refused for a tool, a gate and a command", async () => {
    using dir = tempDir();
    const { session, plugin, logs, marker } = await loaded(dir.path);
    await using _ = session;
    const before = performance.now();
    const slept = await plugin.invoke("sleep", { ms: 100 });
    const wall = performance.now() - before;
    expect(slept.durationMs).toBeGreaterThanOrEqual(95);
    expect(slept.durationMs).toBeLessThanOrEqual(Math.ceil(wall));
    expect((await plugin.invoke("typed", { n: "5" })).output.args).toEqual({ n: 5 });
    expect(logs).toContain("1 typed: took n as the type its inputSchema asks for");
    const echoed = "[REDACTED:TOKEN]";
    for (const [attempt, what] of [
      [plugin.invoke("work", { x: echoed }), "tool 'work'"],
      [plugin.gate("dyn", { x: echoed }), "tool 'dyn'"],
      [plugin.command("say", echoed), "command 'say'"],
    ] as const) {
      const error = await refusal(attempt);
      expect(error.code).toBe("E_REDACTED_ECHO");
      expect(error.message).toStartWith(`the arguments of plugin 'handle' ${what} hold a redaction marker`);
    }
    expect(lines(marker)).toEqual(["invoke sleep", "invoke typed"]);
  });
});

describe("restarts, crashes and quarantine", () => {
  test("restart() and a crash each start a new host, logged as which; an end with no call waiting is named; the third crash quarantines, once", async () => {
    using dir = tempDir();
    const { session, plugin, logs } = await loaded(dir.path);
    await using _ = session;
    const changes: PluginChange[] = [];
    plugin.onChange((c) => changes.push(c));
    plugin.onChange(() => {
      throw new Error("listener bug");
    });
    const first = plugin.pid!;
    await plugin.restart();
    expect(alive(first)).toBe(false);
    expect(plugin.pid).not.toBe(first);
    expect(logs).toContain("2 starting a new plugin host for 'handle'");
    expect(logs).toContain("4 a change listener of 'handle' threw: listener bug");
    expect(changes).toEqual([{ kind: "restarted" }]);
    // two restarts at once: the second finds no host to end, and waits for the same new one
    await Promise.all([plugin.restart(), plugin.restart()]);
    expect(changes).toEqual([{ kind: "restarted" }, { kind: "restarted" }]);
    changes.splice(1);
    // 1: an end while no call waits on it
    const second = plugin.pid!;
    await plugin.invoke("exit_after");
    await until(() => !alive(second), 10_000, "the host's own exit");
    await until(() => logs.some((l) => l.includes("ended unexpectedly")), 5000, "its end, logged");
    expect(logs).toContain(
      "4 the plugin host of 'handle' ended unexpectedly (exit code 5) while no call was waiting on it — in cxagent_plugin_poll or a thread of the plugin's own; the next call starts a new one",
    );
    expect(plugin.pid).toBeNull();
    expect(plugin.isQuarantined).toBe(false);
    expect((await plugin.invoke("work")).output.invokes).toBe(1);
    expect(logs).toContain("3 starting a new plugin host for 'handle' after the last one ended");
    expect(changes).toEqual([{ kind: "restarted" }, { kind: "restarted" }]);
    // 2: a crash during a call
    expect((await refusal(plugin.invoke("exit", { code: 9 }))).code).toBe("E_CRASHED");
    expect(plugin.isQuarantined).toBe(false);
    // 3: quarantined, told once, and every way in refuses with it
    expect((await refusal(plugin.invoke("exit", { code: 9 }))).code).toBe("E_CRASHED");
    expect(plugin.isQuarantined).toBe(true);
    const message = `plugin 'handle' crashed 3 times within ${CRASH_BUDGET.windowMs / 60_000} minutes and is quarantined for the rest of this session`;
    expect(message).toContain("within 5 minutes");
    expect(changes.map((c) => c.kind)).toEqual(["restarted", "restarted", "restarted", "quarantined"]);
    expect(logs.filter((l) => l === `4 ${message}`)).toHaveLength(1);
    for (const attempt of [plugin.invoke("work"), plugin.gate("dyn", { mode: "none" }), plugin.command("say"), plugin.restart()]) {
      const error = await refusal(attempt);
      expect(error.code).toBe("E_QUARANTINED");
      expect(error.message).toBe(message);
      expect(error.hint).toBe("fix the plugin (what it wrote may say why it crashes), then start a new session");
    }
    expect(plugin.pid).toBeNull();
    expect(changes).toHaveLength(4);
    // the ends during a call (and the restart's) were not "unexpected with no call waiting"
    expect(logs.filter((l) => l.includes("ended unexpectedly"))).toHaveLength(1);
  });

  test("an end by a signal with no call waiting is named by its signal; what it submits reaches the session", async () => {
    using dir = tempDir();
    const { session, plugin, logs } = await loaded(dir.path, {}, { submits: [5, "a goal"] });
    await using _ = session;
    const submits: unknown[] = [];
    plugin.onSubmit((s) => submits.push(s));
    await until(() => submits.length === 1, 10_000, "the submit");
    expect(submits).toMatchObject([{ goal: "a goal" }]);
    expect(logs).toContain("3 a submit was refused: its goal must be a non-empty string, not 5");
    const pid = plugin.pid!;
    await plugin.invoke("kill_after");
    await until(() => !alive(pid) && logs.some((l) => l.includes("ended unexpectedly")), 10_000, "its end, logged");
    expect(logs.find((l) => l.includes("ended unexpectedly"))).toStartWith("4 the plugin host of 'handle' ended unexpectedly (signal SIGKILL) while no call was waiting");
  });

  test("a crash of a host serving a lease counts toward the quarantine too", async () => {
    using dir = tempDir();
    const { session, plugin, logs } = await loaded(dir.path, { permission: "once" });
    await using _ = session;
    const changes: PluginChange[] = [];
    plugin.onChange((c) => changes.push(c));
    const own = plugin.pid;
    for (let crash = 1; crash <= 3; crash++) {
      expect(plugin.isQuarantined).toBe(false);
      expect((await refusal(plugin.invoke("dyn", { mode: "lease", path: join(dir.path, "out"), exit: 9 }))).code).toBe("E_CRASHED");
    }
    expect(plugin.isQuarantined).toBe(true);
    expect(changes.map((c) => c.kind)).toEqual(["quarantined"]);
    // its own host was not the one that crashed
    expect(plugin.pid).toBe(own);
    expect(logs.some((l) => l.includes("handle: "))).toBe(true);
  });

  test("calls that find the host gone share the one new host", async () => {
    using dir = tempDir();
    const { session, plugin, logs } = await loaded(dir.path);
    await using _ = session;
    const changes: PluginChange[] = [];
    plugin.onChange((c) => changes.push(c));
    await refusal(plugin.invoke("exit", { code: 9 }));
    const both = await Promise.all([plugin.invoke("work"), plugin.invoke("work"), plugin.invoke("work")]);
    expect(both.map((r) => r.output.invokes).sort()).toEqual([1, 2, 3]);
    expect(changes).toEqual([{ kind: "restarted" }]);
    // the first new host of all, after a crash: not a restart anyone asked for
    expect(logs.filter((l) => l.includes("starting a new plugin host"))).toEqual(["3 starting a new plugin host for 'handle' after the last one ended"]);
  });

  test.each([
    ["exactly the window apart still count together", CRASH_BUDGET.windowMs, 3],
    ["one millisecond more apart do not", CRASH_BUDGET.windowMs + 1, 4],
  ])("crashes %s", async (_what, apart, quarantinedAt) => {
    using dir = tempDir();
    const { session, plugin } = await loaded(dir.path);
    await using _ = session;
    const now = Date.now;
    const at = now();
    try {
      for (let crash = 1; crash <= 4; crash++) {
        // the clock a crash is noted by: the first crash at `at`, the rest `apart` later
        Date.now = () => (crash === 1 ? at : at + apart);
        expect((await refusal(plugin.invoke("exit", { code: 9 }))).code).toBe("E_CRASHED");
        Date.now = now;
        expect(plugin.isQuarantined).toBe(crash >= quarantinedAt);
        if (crash === quarantinedAt) break;
      }
    } finally {
      Date.now = now;
    }
    expect(plugin.isQuarantined).toBe(true);
  });
});

describe("stop", () => {
  test("ends the host, runs stop once, logs a stop that failed; after it every way in is E_STOPPED", async () => {
    using dir = tempDir();
    const { session, plugin, logs, marker } = await loaded(dir.path, {}, { failStop: true });
    await using _ = session;
    const pid = plugin.pid!;
    await plugin.stop();
    expect(alive(pid)).toBe(false);
    expect(lines(marker)).toEqual(["stopped"]);
    expect(logs).toContain("3 plugin 'handle': stop() failed: stop refused on purpose");
    expect(logs.filter((l) => l.includes("ended unexpectedly"))).toEqual([]);
    await plugin.stop();
    expect(lines(marker)).toEqual(["stopped"]);
    expect(plugin.pid).toBeNull();
    for (const attempt of [plugin.invoke("work"), plugin.gate("dyn", { mode: "none" }), plugin.command("say"), plugin.restart()]) {
      const error = await refusal(attempt);
      expect(error.code).toBe("E_STOPPED");
      expect(error.message).toBe("plugin 'handle' has been stopped");
    }
  });

  test.each([
    ["gated", "checked", {}],
    ["leased (a host of its own)", "dyn", { mode: "lease" }],
  ])("while a %s call's permission is asked: the call never starts, and no host is started for it", async (_what, tool, args) => {
    using dir = tempDir();
    const { session, plugin, marker, folder } = await loaded(dir.path);
    await using _ = session;
    const error = await refusal(
      plugin.invoke(tool, { ...args, path: join(dir.path, "out") }, {
        permission: async () => {
          await plugin.stop();
          return "once";
        },
      }),
    );
    expect(error.code).toBe("E_STOPPED");
    expect(hostsOf(join(folder, "handle.js"))).toEqual([]);
    expect(lines(marker)).toEqual(["stopped"]);
  });

  test("a restart asked while it stops is refused, and the plugin's own stop still runs", async () => {
    using dir = tempDir();
    const { session, plugin, marker } = await loaded(dir.path);
    await using _ = session;
    const stopping = plugin.stop();
    expect((await refusal(plugin.restart())).code).toBe("E_STOPPED");
    await stopping;
    expect(lines(marker)).toEqual(["stopped"]);
  });

  test("ends the submits' iterator; a stop past the session's stopMs is given up, logged", async () => {
    using dir = tempDir();
    const { session, plugin, logs } = await loaded(dir.path, { stopMs: 300 }, { hangStop: true });
    await using _ = session;
    const iterated: unknown[] = [];
    const iterating = (async () => {
      for await (const submit of plugin.submits()) iterated.push(submit);
      return "ended";
    })();
    const pid = plugin.pid!;
    await within(plugin.stop(), 8000, "stop, past its deadline");
    expect(await within(iterating, 5000, "the iterator's end")).toBe("ended");
    expect(alive(pid)).toBe(false);
    expect(logs.filter((l) => l.startsWith("3 ") && l.includes("300 ms"))).toHaveLength(1);
  });

  test("while a new host is starting: that host is ended too", async () => {
    using dir = tempDir();
    const { session, plugin, marker, folder } = await loaded(dir.path);
    await using _ = session;
    expect(hostsOf(join(folder, "handle.js"))).toEqual([plugin.pid!]);
    await refusal(plugin.invoke("exit", { code: 9 }));
    const next = plugin.invoke("work").catch((e: unknown) => e as CxError);
    await plugin.stop();
    // when stop() returns, no host of it runs: the one that was starting was stopped as it came up
    expect(hostsOf(join(folder, "handle.js"))).toEqual([]);
    expect(plugin.pid).toBeNull();
    expect(lines(marker)).toEqual(["invoke exit", "stopped"]);
    expect(((await next) as CxError).message).toBe("plugin 'handle' has been stopped");
  });

  test("a start that fails: E_PLUGIN_FAILED with its message, the plugin's stop run, its host ended", async () => {
    using dir = tempDir();
    const folder = writeModule(dir.path, "handle", CODE, MANIFEST, ".js");
    const marker = join(dir.path, "marker");
    await using session = await openSession();
    const error = await refusal(session.load(folder, { settings: { marker, failStart: true } }));
    expect(error.code).toBe("E_PLUGIN_FAILED");
    expect(error.message).toBe("plugin 'handle' failed to start: start refused on purpose");
    expect(error.hint).toBe("check the plugin's settings in config.json, and what it wrote");
    expect(error.next).toEqual({ do: "see-output", plugin: "handle" });
    expect(lines(marker)).toEqual(["stopped"]);
  });

  test("a start past its deadline fails the load, and its host is ended", async () => {
    using dir = tempDir();
    const folder = writeModule(dir.path, "handle", CODE, MANIFEST, ".js");
    await using session = await openSession({ startMs: 300 });
    const error = await refusal(within(session.load(folder, { settings: { hangStart: true } }), 10_000, "the load"));
    expect(error.code).toBe("E_TIMEOUT");
    expect(hostsOf(join(folder, "handle.js"))).toEqual([]);
  });

  test("a manifest refused at load: the plugin never started, so its stop is not run", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const code = CODE.replace("export default definePlugin({", `export default definePlugin({\n  describe() { return { ...${JSON.stringify({ pluginContract: 4, name: "handle", version: "1.0.0", ...MANIFEST })}, version: "2.0.0" }; },`);
    const folder = writeModule(dir.path, "handle", code, MANIFEST, ".js");
    await using session = await openSession({ env: { CXAGENT_FX_MARKER: marker } });
    const error = await refusal(session.load(folder, { settings: { marker } }));
    expect(error.code).not.toBe("E_PLUGIN_FAILED");
    expect(error.message).toContain("2.0.0");
    expect(hostsOf(join(folder, "handle.js"))).toEqual([]);
    expect(lines(marker)).toEqual([]);
  });
});
