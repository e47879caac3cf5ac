/**
 * The plugin host end to end: real fixtures compiled from C, real plugin host processes.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Connection } from "../../src/host/connection.ts";
import { CxError } from "../../src/index.ts";
import { CONTRACT_CURRENT } from "../../src/protocol/manifest.ts";
import { SHIM_OPTION } from "../../src/protocol/host-args.ts";
import { hostCommand } from "../../src/session/host-command.ts";
import { pluginHostEnv } from "../../src/session/host-env.ts";
import { CALCULATOR, fixture, fixtureLibrary, freeCounts, openSession, refusal, tempDir, writeModule } from "../helpers.ts";

async function loadError(ref: string, env: Record<string, string> = {}): Promise<CxError> {
  await using session = await openSession({ env });
  return refusal(session.load(ref));
}

describe("the calculator", () => {
  test("describes, starts, runs each tool and stops", async () => {
    // calc_add and a zero divisor ask for permission: this script allows them
    await using session = await openSession({ permission: "once" });
    const calc = await session.load(CALCULATOR);
    expect(calc.name).toBe("calculator");
    expect(calc.tools.map((t) => [t.name, t.gated])).toEqual([
      ["calc_add", true],
      ["calc_multiply", false],
      ["calc_divide", "dynamic"],
    ]);
    const add = await calc.invoke("calc_add", { a: 2, b: 3 });
    expect(add).toMatchObject({ success: true, output: { content: "2 + 3 = 5", answer: 5 } });
    const multiply = await calc.invoke("calc_multiply", { a: 6, b: 7 });
    expect(multiply.output).toEqual({ content: "6 * 7 = 42", answer: 42 });
    const divide = await calc.invoke("calc_divide", { a: 1, b: 3 });
    expect(divide.output.content).toBe("1 / 3 = 0.3333");
    const byZero = await calc.invoke("calc_divide", { a: 1, b: 0 });
    expect(byZero.success).toBe(false);
    expect(byZero.errorMessage).toContain("division by zero");
    const pid = calc.pid!;
    await calc.stop();
    expect(() => process.kill(pid, 0)).toThrow();
  });

  test("reads settings.precision, and falls back to the default on a bad value", async () => {
    await using session = await openSession();
    const two = await session.load(CALCULATOR, { settings: { precision: 2 } });
    expect((await two.invoke("calc_divide", { a: 1, b: 3 })).output.content).toBe("1 / 3 = 0.33");
    await session.unload("calculator");
    const bad = await session.load(CALCULATOR, { settings: { precision: "four" } });
    expect((await bad.invoke("calc_divide", { a: 1, b: 3 })).output.content).toBe("1 / 3 = 0.3333");
    await session.unload("calculator");
    const clamped = await session.load(CALCULATOR, { settings: { precision: 99 } });
    expect((await clamped.invoke("calc_divide", { a: 2, b: 3 })).output.content).toMatch(/^2 \/ 3 = 0\.6{11}7$/);
  });

  test("an argument that is not a number fails the call before the plugin sees it, and the plugin stays up", async () => {
    await using session = await openSession({ permission: "once" });
    const calc = await session.load(CALCULATOR);
    const error = await calc.invoke("calc_add", { a: "two", b: 3 }).catch((e) => e);
    expect(error).toBeInstanceOf(CxError);
    expect(error.code).toBe("E_INVALID_INPUT");
    expect((await calc.invoke("calc_multiply", { a: 2, b: 2 })).output.answer).toBe(4);
  });
});

describe("refusing a library", () => {
  test("that does not exist", async () => {
    const error = await loadError("/nonexistent/plugin.so");
    expect(error.code).toBe("E_NOT_FOUND");
    expect(error.message).toContain("/nonexistent/plugin.so");
  });

  test("that is not a shared library", async () => {
    const error = await loadError(fixture("not-a-library"));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toContain("not-a-library.so");
    // refused in the parent, by its ELF reader, before any process exists
    expect(error.message).toContain("not-a-library.so cannot be loaded: it does not start with the ELF magic bytes, so it is not a shared library");
  });

  test("missing cxagent_plugin_invoke, naming it", async () => {
    const error = await loadError(fixture("missing-invoke"));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toContain("does not export the mandatory function: cxagent_plugin_invoke");
  });

  test("missing three exports, naming all three in one message", async () => {
    const error = await loadError(fixture("missing-three"));
    expect(error.message).toContain("3 mandatory functions: cxagent_plugin_invoke, cxagent_plugin_gate, cxagent_plugin_stop");
  });

  test.each([
    ["handshake-99", "99", "newer"],
    ["handshake-1", "1", "older"],
  ])("with handshake %s, naming both numbers and the range", async (name, version, why) => {
    const error = await loadError(fixture(name));
    expect(error.code).toBe("E_HANDSHAKE");
    expect(error.message).toContain(`contract ${version}, which is ${why}`);
    expect(error.message).toContain("accepts contracts 2 to 4");
  });

  test("whose manifest's pluginContract differs from the handshake", async () => {
    const error = await loadError(fixture("contract-mismatch"));
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain("pluginContract 3 but cxagent_plugin_abi_version returned 4");
  });
});

describe("describe returning", () => {
  const cases: [string, string | RegExp][] = [
    ["invalid", /invalid JSON .*: \{"pluginContract": 4, "name": "describe-bad", oops/],
    ["null", "the manifest is null, not a JSON object"],
    ["null-pointer", "cxagent_plugin_describe returned NULL"],
    ["unknown-key", "manifest declares 'providers', which this build does not service"],
    ["sometimes", `tools[1].gated: must be true, false or "dynamic", not the string "sometimes" (tool 'bad_tool')`],
    ["no-tools", "tools is required"],
    // 200,000 levels: a manifest error with the path where it went too deep, not a stack overflow
    ["deep", "tools[0].inputSchema.x[0][0][0]"],
    // valid, but past the line cap on the startup line: refused at once, not left to the startup deadline
    ["huge", "the manifest from cxagent_plugin_describe is 68157593 bytes on the startup line, more than one protocol line holds (67108864 bytes)"],
  ];
  test.each(cases)("%s is refused with its path", async (mode, expected) => {
    const error = await loadError(fixture("describe-bad"), { CXAGENT_FX_DESCRIBE: mode });
    expect(error.code).toBe("E_MANIFEST");
    if (typeof expected === "string") expect(error.message).toContain(expected);
    else expect(error.message).toMatch(expected);
  });

  test("a module's describe() whose manifest is past the line cap is refused at once, by its size", async () => {
    using dir = tempDir();
    const folder = writeModule(
      dir.path,
      "huge-describe",
      `export default { describe() { return { pluginContract: 4, name: "huge-describe", version: "1.0.0", tools: [{ name: "work", description: "d".repeat(65 * 1024 * 1024) }] }; }, start() {}, invoke() { return { success: true, output: {} }; }, stop() {} };`,
    );
    const started = performance.now();
    const error = await loadError(folder);
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain("the manifest from describe() is 68157597 bytes on the startup line, more than one protocol line holds (67108864 bytes)");
    expect(performance.now() - started).toBeLessThan(8000); // the startup deadline is 10 s
  }, 20_000);

  test("several problems are all reported at once", async () => {
    const error = await loadError(fixture("describe-bad"), { CXAGENT_FX_DESCRIBE: "several" });
    expect(error.message).toContain("has 5 problems");
    expect(error.message).toContain("manifest declares 'observers', which this build does not service");
    expect(error.message).toContain("name: the string \"bad name!\" is not a plugin name");
    expect(error.message).toContain("version: must not be blank");
    expect(error.message).toContain(`tools[0].gated: must be true, false or "dynamic", not number 1`);
    expect(error.message).toContain("tools[0] declares 'extra', which this build does not service");
  });
});

describe("invoke returning", () => {
  const bad: [string, string][] = [
    ["invalid_json", "cxagent_plugin_invoke returned invalid JSON (an unexpected end at byte 24): {\"ok\": true, \"result\": {"],
    ["null_pointer", "cxagent_plugin_invoke returned NULL"],
    ["number", "cxagent_plugin_invoke returned a number where a result envelope object belongs: 42"],
    ["json_null", "cxagent_plugin_invoke returned null where a result envelope object belongs"],
    ["no_ok", "returned an envelope without \"ok\""],
    ["ok_string", "returned an envelope whose \"ok\" is not a boolean"],
    ["ok_without_result", "returned ok:true without a \"result\""],
    ["empty_string", "returned an empty string"],
    ["result_not_object", "returned a result that is number 5, not a JobResult object"],
  ];

  test("malformed envelopes: each a clean failed call, the host alive; every string freed once", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    await using session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log } });
    const plugin = await session.load(fixture("invoke-replies"));
    const pid = plugin.pid;
    let good = 0;
    for (const [tool, message] of bad) {
      const error = await plugin.invoke(tool).catch((e) => e);
      expect(error).toBeInstanceOf(CxError);
      expect(error.code).toBe("E_BAD_REPLY");
      expect(error.message).toContain(message);
      expect((await plugin.invoke("good", { n: good++ })).success).toBe(true);
      expect(plugin.pid).toBe(pid);
    }
    const failed = await plugin.invoke("failed_without_error").catch((e) => e);
    expect(failed.code).toBe("E_PLUGIN_FAILED");
    expect(failed.message).toContain("reported a failure (ok:false) without an error message");
    const failedWithError = await plugin.invoke("failed_with_error").catch((e) => e);
    expect(failedWithError.message).toContain("failed_with_error failed: the backend is down");
    await plugin.stop();
    // describe + start + 9 malformed (8 non-NULL) + 9 good + 2 ok:false + stop
    expect(freeCounts(log)).toEqual({ returned: 1 + 1 + 8 + 9 + 2 + 1, freed: 1 + 1 + 8 + 9 + 2 + 1 });
  });

  test("unknown extra fields are accepted, pretty-printed JSON and invalid UTF-8 too", async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("invoke-replies"));
    expect(await plugin.invoke("extra_fields")).toMatchObject({ success: true, output: { content: "fine" } });
    expect((await plugin.invoke("pretty_printed")).output.content).toBe("line one\nline two");
    expect((await plugin.invoke("invalid_utf8")).output.content).toBe("bad \ufffd\ufffd bytes");
  });

  test("envelopes read in place: escaped member names, blanks, carriage returns; big arguments and quotes at every offset", async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("invoke-replies"));
    expect((await plugin.invoke("escaped_keys")).output.content).toBe("escaped");
    expect((await plugin.invoke("spaced")).output.content).toBe("spaced");
    expect((await plugin.invoke("cr_breaks")).output.content).toBe("cr");
    // The "good" tool echoes its arguments: every byte of them crosses both ways and is checked
    // at each offset of the word-at-a-time scan.
    for (let k = 0; k < 20; k++) {
      const args = { s: `${"x".repeat(k)}"\\${"y".repeat(k)}\u0001é😀`, n: k, nested: { [`k"${k}`]: [k, null, true] } };
      expect((await plugin.invoke("good", args)).output.arguments).toEqual(args);
    }
    const big = { data: "z".repeat(3 << 20) + '"', more: "tail" };
    expect((await plugin.invoke("good", big)).output.arguments).toEqual(big);
  });

  test("a raw control character in a returned string is refused wherever it sits", async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("invoke-replies"));
    for (let at = 0; at < 20; at++) {
      const error = await plugin.invoke("control_at", { at }).catch((e) => e);
      expect(error.code).toBe("E_BAD_REPLY");
      expect(error.message).toContain("a control character inside a string");
    }
  });

  test("a tool reporting success:false comes back as a result, not an error", async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("invoke-replies"));
    expect(await plugin.invoke("tool_failed")).toMatchObject({ success: false, exitCode: 2, errorMessage: "file not found" });
  });
});

describe("crashes", () => {
  test.each([
    ["segfault", "signal SIGSEGV"],
    ["abort", "signal SIGABRT"],
    ["exit", "exit code 3"],
  ])("a %s in invoke fails the call naming the cause; a plugin beside it keeps working", async (tool, cause) => {
    await using session = await openSession();
    const crashing = await session.load(fixture("crash-in-invoke"));
    const calc = await session.load(CALCULATOR);
    const error = await crashing.invoke(tool).catch((e) => e);
    expect(error.code).toBe("E_CRASHED");
    expect(error.message).toContain(`crashed (${cause}) while cxagent_plugin_invoke of ${tool} was running`);
    expect((await calc.invoke("calc_multiply", { a: 3, b: 3 })).output.answer).toBe(9);
    // the next call starts a fresh plugin host
    expect((await crashing.invoke("fine")).output.content).toBe("survived");
  });

  test("exit(3) in start refuses the load with the cause and the plugin's last words", async () => {
    const error = await loadError(fixture("exit-in-start"));
    expect(error.code).toBe("E_CRASHED");
    expect(error.message).toContain("crashed (exit code 3) while cxagent_plugin_start was running");
    expect(error.message).toContain("exit-in-start: giving up");
  });
});

test("a plugin printing to stdout on every call: the protocol survives 1,000 calls and the text reaches the plugin's log", async () => {
  const lines: string[] = [];
  await using session = await openSession({ onOutput: (plugin, line) => lines.push(`${plugin}: ${line}`) });
  const plugin = await session.load(fixture("stdout-noise"));
  for (let i = 0; i < 1000; i++) {
    const result = await plugin.invoke("stdout_noise", { i });
    expect(result.output).toEqual({ content: "quiet", arguments: { i } });
  }
  await plugin.stop();
  expect(lines).toContain('stdout-noise: printf noise {"id":1,"ok":true} {"i":999}');
  expect(lines.filter((l) => l === "stdout-noise: puts noise").length).toBe(1000);
  expect(lines.filter((l) => l === "stdout-noise: write(1) noise").length).toBe(1000);
});

// Both tests below ask about bytes, not about stuck workers: on a loaded machine 16 workers writing
// 1 MiB each can take over the default second, which then refuses the calls queued behind them.
test("64 concurrent invokes each answering 1 MiB: every reply whole and matched to its id", async () => {
  await using session = await openSession({ stuckMs: 60_000 });
  const plugin = await session.load(fixture("big-reply"));
  const results = await Promise.all(Array.from({ length: 64 }, (_, tag) => plugin.invoke("big_reply", { tag })));
  results.forEach((result, tag) => {
    expect(result.output.tag).toBe(tag);
    expect(result.output.content === bigContent(tag, 1 << 20)).toBe(true);
  });
});

// The parent reads the rest of a long line straight from the socket (LineSplitter.drain) up to
// 8 MiB, and as chunks past that; replies of every size, all in flight at once, arrive whole.
test("replies of 5 bytes to 20 MiB in flight together, small ones between big ones: every byte in place", async () => {
  await using session = await openSession({ stuckMs: 60_000 });
  const plugin = await session.load(fixture("big-reply"));
  const sizes = [5, 3 << 20, 100, 20 << 20, 9 << 20, 4097, 64 << 10, 1 << 20, (8 << 20) - 40, 7, 2 << 20, 600 << 10];
  const results = await Promise.all(sizes.map((bytes, tag) => plugin.invoke("big_reply", { bytes, tag }, { timeoutMs: 60_000 })));
  results.forEach((result, tag) => {
    expect(result.output.tag).toBe(tag);
    const content = result.output.content as string;
    expect(content.length).toBe(sizes[tag]!);
    expect(content === bigContent(tag, sizes[tag]!)).toBe(true);
  });
});

/** What big-reply.c answers for `tag` and `bytes`: letters from 'a' + tag, round the alphabet. */
function bigContent(tag: number, bytes: number): string {
  const round = Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + ((tag + i) % 26))).join("");
  return round.repeat(Math.ceil(bytes / 26)).slice(0, bytes);
}

test("calls run at the same time: the first waits on a barrier only the second releases", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("barrier"));
  const [first, second] = await Promise.all([plugin.invoke("barrier"), plugin.invoke("barrier")]);
  expect(first.success).toBe(true);
  expect(second.success).toBe(true);
  expect([first.output.content, second.output.content].sort()).toEqual(["arrival 1", "arrival 2"]);
});

// A reply that finds more requests already read waits to go out with theirs; when the reader role
// is handed on, what waits is flushed. Check mode hands the role on at every call, so the two race
// thousands of times a second here: a reply held just after the last flush would never be sent
// (before the fix, about one burst in 1,500 lost a reply until its deadline).
// Counted, not timed: 1,500 bursts (at most 15 s of them on a busy machine), each reply given 5 s.
test("bursts of 8 calls with the reader role handed on at every call: every reply arrives, for 1,500 bursts", async () => {
  using dir = tempDir();
  const { connection } = await Connection.spawn({
    hostCommand: hostCommand(),
    library: fixtureLibrary("free-does-nothing"),
    label: "free-does-nothing",
    cwd: dir.path,
    env: pluginHostEnv(process.env),
    check: true,
  });
  try {
    expect(await connection.request({ kind: "start", context: { workingDirectory: dir.path, settings: {}, hostContract: CONTRACT_CURRENT } })).toMatchObject({ ok: true });
    const call = () => connection.request({ kind: "invoke", tool: "free_does_nothing", arguments: {} }, { timeoutMs: 5000 }).then((r) => r.ok, (e: Error) => e.message);
    let bursts = 0;
    const lost: unknown[] = [];
    for (const end = performance.now() + 15_000; bursts < 1500 && performance.now() < end && lost.length === 0; bursts++) {
      lost.push(...(await Promise.all(Array.from({ length: 8 }, call))).filter((r) => r !== true));
    }
    expect(lost).toEqual([]);
    expect(bursts).toBeGreaterThanOrEqual(1000);
  } finally {
    await connection.shutdown({ sendStop: false });
  }
}, 40_000);

/** The plugin host's thread named `name` (the shim names its threads): its voluntary context switches, i.e. its wake-ups. */
function wakeups(pid: number, name: string): number {
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    if (readFileSync(`/proc/${pid}/task/${task}/comm`, "latin1").trim() !== name) continue;
    return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/task/${task}/status`, "latin1"))![1]);
  }
  throw new Error(`plugin host ${pid} has no thread named ${name}`);
}

// The monitor watches each call for the hand-off (1 ms). A call that finds it asleep wakes it, on
// the other CPU; while calls come often it looks once per hand-off time instead, and 10 ms after
// the latest call it sleeps until the next one. Counted as wake-ups, not timed: a back-to-back
// call takes tens of µs, so a wake-up per call that found it asleep is far more than one per ms.
test.skipIf(process.platform !== "linux")("the hand-off monitor wakes about once per ms of back-to-back calls, not per call, and not at all once they stop", async () => {
  await using session = await openSession();
  const noop = await session.load(fixture("noop"));
  for (let i = 0; i < 200; i++) await noop.invoke("noop", {});
  const pid = noop.pid!;
  const before = wakeups(pid, "cxagent-monitor");
  const began = performance.now();
  const calls = 5000;
  for (let i = 0; i < calls; i++) await noop.invoke("noop", {});
  const ms = performance.now() - began;
  const during = wakeups(pid, "cxagent-monitor") - before;
  expect(during).toBeLessThanOrEqual(1.5 * ms + 20);
  // It falls asleep 10 ms after the last call; on a busy machine that may take longer to be seen:
  // wait for a count that holds still for 50 ms, then for 300 ms it must not move at all.
  let resting = wakeups(pid, "cxagent-monitor");
  for (const end = performance.now() + 10_000; performance.now() < end; ) {
    await Bun.sleep(50);
    const now = wakeups(pid, "cxagent-monitor");
    if (now === resting) break;
    resting = now;
  }
  await Bun.sleep(300);
  expect(wakeups(pid, "cxagent-monitor") - resting).toBe(0);
  // The pool thread serving the calls carries its name too.
  expect(readdirSync(`/proc/${pid}/task`).some((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, "latin1").trim() === "cxagent-pool")).toBe(true);
}, 20_000);

// A host started without --shim= (by hand, say) looks for itself whether the built shim is fresh.
test("a plugin host started without the parent naming its shim finds it itself and answers ready", () => {
  const command = hostCommand().filter((a) => !a.startsWith(SHIM_OPTION));
  const run = Bun.spawnSync([...command, fixtureLibrary("noop")], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines = run.stdout.toString().trim().split("\n");
  expect(JSON.parse(lines.at(-1)!)).toMatchObject({ ready: true, manifest: { name: "noop" } });
});
