/**
 * Plugins that originate work (poll) and commands a person types (SPEC §3.1, §4.5).
 */
import { describe, expect, test } from "bun:test";
import { CxError, type CallEvent, type Submit } from "../../src/index.ts";
import { fixture, openSession, until } from "../helpers.ts";

function collect(logs: string[] = []) {
  return openSession({ pollMs: 20, onLog: (_p, _l, text) => logs.push(text) });
}

describe("poll", () => {
  test("a submit arrives once, with its goal", async () => {
    await using session = await collect();
    const poller = await session.load(fixture("poller"));
    const seen: Submit[] = [];
    poller.onSubmit((s) => seen.push(s));
    await poller.invoke("submit_once");
    await until(() => seen.length === 1, 5000, "the submit");
    const polls = (await poller.invoke("polls")).output.polls as number;
    await until(async () => ((await poller.invoke("polls")).output.polls as number) > polls + 3, 5000, "more polls");
    expect(seen).toEqual([{ plugin: "poller", goal: "run the tests", wantResult: false }]);
  });

  test("many submits arrive in order, also through the async iterator", async () => {
    await using session = await collect();
    const poller = await session.load(fixture("poller"));
    const goals: string[] = [];
    const stop = new AbortController();
    const reading = (async () => {
      for await (const s of poller.submits(stop.signal)) {
        goals.push(s.goal);
        if (goals.length === 20) stop.abort();
      }
    })();
    await poller.invoke("submit_many");
    await reading;
    expect(goals).toEqual(Array.from({ length: 20 }, (_, i) => `goal ${i + 1}`));
  });

  test("wantResult: true is refused by name and dropped; garbage, JSON null and bad goals go to the log; the loop goes on", async () => {
    const logs: string[] = [];
    await using session = await collect(logs);
    const poller = await session.load(fixture("poller"));
    const seen: string[] = [];
    poller.onSubmit((s) => seen.push(s.goal));
    await poller.invoke("submit_refused");
    await until(() => seen.length === 1, 5000, "the submit after the refusals");
    expect(seen).toEqual(["after the refusals"]);
    expect(logs).toContain(`a submit was refused: wantResult: true is not supported by this host (the goal "wants an answer" was dropped, not downgraded)`);
    expect(logs.some((l) => l.startsWith("cxagent_plugin_poll returned invalid JSON") && l.endsWith("garbage, not json"))).toBe(true);
    expect(logs).toContain("cxagent_plugin_poll returned null instead of a submit object; ignored: null");
    expect(logs.some((l) => l.startsWith("cxagent_plugin_poll returned an array instead of a submit object"))).toBe(true);
    expect(logs).toContain("a submit was refused: its goal must be a non-empty string, not 42");
  });

  test("poll goes on while a long invoke runs", async () => {
    await using session = await collect();
    const poller = await session.load(fixture("poller"));
    let invokeDone = false;
    const seen: string[] = [];
    poller.onSubmit((s) => seen.push(s.goal));
    const long = poller.invoke("long_with_submit", { ms: 1500 }).then(() => (invokeDone = true));
    await until(() => seen.length === 1, 5000, "the submit made during the call");
    expect(invokeDone).toBe(false);
    expect(seen).toEqual(["submitted during a long call"]);
    await long;
  });

  test("a submit from a plugin without client: true is refused", async () => {
    const logs: string[] = [];
    await using session = await collect(logs);
    const plugin = await session.load(fixture("poller-not-client"));
    const seen: Submit[] = [];
    plugin.onSubmit((s) => seen.push(s));
    await until(() => logs.some((l) => l.includes("a submit was refused")), 5000, "the refusal");
    expect(logs).toContain("a submit was refused: the plugin's manifest does not say client: true, so it may not start work");
    expect(seen).toEqual([]);
  });

  test("client: true without a poll export is refused at load, naming cxagent_plugin_poll", async () => {
    await using session = await collect();
    const error = await session.load(fixture("client-without-poll")).catch((e) => e);
    expect(error).toBeInstanceOf(CxError);
    expect(error.message).toContain("declares client: true but the library does not export cxagent_plugin_poll");
  });
});

describe("commands", () => {
  test("the argument text reaches the plugin byte-exact: spaces, quotes, unicode", async () => {
    await using session = await collect();
    const commands = await session.load(fixture("commands"));
    for (const text of ["world", "two  spaces inside", `"double" and 'single' quotes \\ backslash`, "unicode: é ☃ 😀 漢字", ""]) {
      expect(await commands.command("echo", text)).toEqual({ message: text, status: "reported" });
    }
    expect(await commands.command("echo", "   trimmed at both ends \t")).toEqual({ message: "trimmed at both ends", status: "reported" });
  });

  test("refused, changed, NULL, and a status that is not one of the three", async () => {
    await using session = await collect();
    const commands = await session.load(fixture("commands"));
    expect(await commands.command("refuse")).toEqual({ message: "not today", status: "refused" });
    expect(await commands.command("change")).toEqual({ message: null, status: "changed" });
    expect(await commands.command("silent")).toEqual({ message: null, status: "reported" });
    const bad = await commands.command("bad_status").catch((e) => e);
    expect(bad.code).toBe("E_BAD_REPLY");
    expect(bad.message).toContain(`cxagent_plugin_command returned {"message":"x","status":"done"}, not`);
  });

  test("reports made during a command reach the caller like an invoke's", async () => {
    await using session = await collect();
    const commands = await session.load(fixture("commands"));
    const events: CallEvent[] = [];
    expect((await commands.command("reports", "", { onEvent: (e) => events.push(e) })).message).toBe("reported");
    expect(events).toEqual([
      { event: "progress", percent: 50, text: "working on it" },
      { event: "log", level: 2, text: "a command's log" },
    ]);
  });

  test("an undeclared name is refused by the host without calling the plugin", async () => {
    await using session = await collect();
    const commands = await session.load(fixture("commands"));
    const error = await commands.command("never_declared").catch((e) => e);
    expect(error.code).toBe("E_UNKNOWN_COMMAND");
    expect(error.hint).toBe("its commands: echo, refuse, change, silent, bad_status, reports");
  });

  test("a declared command without the export is refused when it first runs, naming cxagent_plugin_command", async () => {
    await using session = await collect();
    const plugin = await session.load(fixture("commands-without-export"));
    const error = await plugin.command("orphan").catch((e) => e);
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toContain("does not export cxagent_plugin_command, so 'orphan' cannot run");
  });

  test("a command name held by another plugin refuses the newcomer", async () => {
    await using session = await collect();
    await session.load(fixture("commands"));
    const error = await session.load(fixture("commands-twin")).catch((e) => e);
    expect(error.code).toBe("E_COLLISION");
    expect(error.message).toBe("plugin 'commands-twin' was refused: its command 'echo' is already held by plugin 'commands'");
  });
});

describe("commands of a contract-3 plugin run one at a time, as that contract promised", () => {
  test("two commands at once: contract 3 runs them in turn, contract 4 lets them overlap", async () => {
    {
      await using session = await openSession();
      const old = await session.load(fixture("commands-meet-3"));
      const serial = await Promise.all([old.command("meet"), old.command("meet")]);
      expect(serial.map((r) => r.message)).toEqual(["alone", "alone"]);
    }
    await using session = await openSession();
    const current = await session.load(fixture("commands-meet-4"));
    const overlapping = await Promise.all([current.command("meet"), current.command("meet")]);
    expect(overlapping.map((r) => r.message)).toEqual(["met", "met"]);
  });

  test("a command that fails does not hold the next one back", async () => {
    await using session = await openSession();
    const old = await session.load(fixture("commands-meet-3"));
    const [unknown, after] = await Promise.allSettled([old.command("nope"), old.command("meet")]);
    expect(unknown.status).toBe("rejected");
    expect(after).toMatchObject({ status: "fulfilled", value: { message: "alone" } });
  });
});
