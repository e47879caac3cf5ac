/**
 * The fault matrix: every misbehaviour × export of fault-matrix.cases.ts, through the real
 * `faulty` fixture. Each row checks the outcome the SPEC gives, that the session and another
 * plugin in it carry on, that every string returned was freed once, and that no process is left.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CxError, type Submit } from "../../src/index.ts";
import { CALCULATOR, fixture, fixtureLibrary, freeCounts, hostsOf, openSession, tempDir, until } from "../helpers.ts";
import { CORTEX_FAULT_NAMES, CORTEX_FUNCTION_NAMES, CORTEX_ROWS, type CortexRow, FAULT_NAMES, ROWS, type Row } from "./fault-matrix.cases.ts";

const BIG = 50 * 1024 * 1024;
const LIBRARY = fixtureLibrary("faulty");

async function outcome<T>(promise: Promise<T>): Promise<T | CxError> {
  return promise.catch((e) => {
    if (!(e instanceof CxError)) throw e;
    return e;
  });
}

function expectError(value: unknown, code: string, says: string) {
  expect(value).toBeInstanceOf(CxError);
  expect((value as CxError).code as string).toBe(code);
  expect((value as CxError).message).toContain(says);
}

async function run(row: Row, dir: string) {
  // Deadlines are short where the row is about a hang, so it ends fast, and generous elsewhere,
  // so a slow machine moving 50 MB or 10 MB of stderr is not mistaken for a hang.
  const hang = row.fault === "hang";
  const timeoutMs = hang ? 500 : 20_000;
  const logs: string[] = [];
  const output: string[] = [];
  const submits: Submit[] = [];
  const session = await openSession({
    env: { CXAGENT_FX_FAULT: `${row.export}:${row.fault}`, CXAGENT_FX_FREE_LOG: join(dir, "frees"), CXAGENT_FX_FAULT_ONCE: join(dir, "once") },
    startupMs: hang ? 1500 : 20_000,
    startMs: hang ? 1000 : 20_000,
    stopMs: hang ? 1000 : 20_000,
    gateMs: hang ? 300 : 20_000,
    pollMs: 50,
    permission: "once",
    onLog: (_p, _l, text) => logs.push(text),
    onOutput: (plugin, line) => plugin === "faulty" && output.push(line),
  });
  const e = row.expected;
  try {
    const calc = await session.load(CALCULATOR);
    const loaded = await outcome(session.load(fixture("faulty")));
    if ("error" in e && (row.export === "describe" || row.export === "start")) {
      expectError(loaded, e.error, e.says);
    } else {
      if (loaded instanceof CxError) throw loaded;
      const plugin = loaded;
      plugin.onSubmit((s) => submits.push(s));
      switch (row.export) {
        case "invoke": {
          const r = await outcome(plugin.invoke("work", {}, { timeoutMs }));
          if ("error" in e) expectError(r, e.error, e.says);
          else if ("result" in e) {
            if (r instanceof CxError) throw r;
            const content = r.output.content as string;
            if (e.result === "big") expect(content.length).toBe(BIG);
            else expect(content).toBe(e.result === "fine" ? "fine" : "bad \ufffd bytes");
          }
          break;
        }
        case "gate": {
          const d = await plugin.gate("work");
          if (!("decision" in e)) throw new Error("a gate row expects a decision");
          if (e.decision === "no prompt") expect(d).toMatchObject({ ask: false, source: "gate" });
          else if (e.decision === "failed") {
            expect(d).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
            expect(d.display).toContain(e.says!);
          } else if (e.decision === "big") expect(d.display!.length).toBe(BIG);
          else expect(d.display).toBe("bad \ufffd bytes");
          expect((await plugin.invoke("work")).output.content).toBe("fine"); // the next call works
          break;
        }
        case "poll": {
          if ("submit" in e) {
            await until(() => submits.length > 0, 10_000, "the submit");
            const goal = submits[0]!.goal;
            if (e.submit === "big") expect(goal.length).toBe(BIG);
            else expect(goal).toBe(e.submit === "polled" ? "polled" : "bad \ufffd bytes");
          } else if ("pollLog" in e) {
            await until(() => logs.some((l) => l.startsWith(e.pollLog)), 5000, "the poll log");
          } else if ("pollCrash" in e) {
            await until(() => logs.some((l) => l.includes(`ended unexpectedly (${e.pollCrash}) while no call was waiting`)), 5000, "the crash report");
            expect((await plugin.invoke("work")).output.content).toBe("fine");
          } else {
            // poll hangs: other calls go on
            expect((await plugin.invoke("work")).output.content).toBe("fine");
          }
          break;
        }
        case "command": {
          const r = await outcome(plugin.command("say", "", { timeoutMs }));
          if ("error" in e) expectError(r, e.error, e.says);
          else if ("command" in e) {
            if (r instanceof CxError) throw r;
            if (e.command === "null") expect(r).toEqual({ message: null, status: "reported" });
            else if (e.command === "big") expect(r.message!.length).toBe(BIG);
            else expect(r.message).toBe(e.command === "fine" ? "fine" : "bad \ufffd bytes");
          }
          break;
        }
        case "stop": {
          await session.unload("faulty");
          if (!("stopLog" in e)) throw new Error("a stop row expects a log");
          const warned = logs.filter((l) => l.includes("cxagent_plugin_stop"));
          if (e.stopLog === null) expect(warned).toEqual([]);
          else expect(warned.some((l) => l.includes(e.stopLog!))).toBe(true);
          break;
        }
      }
      if (row.fault === "stdout") await until(() => output.some((l) => l.includes(`noise from ${row.export}`)), 5000, "the stdout text in the log");
      if (row.fault === "stderr") await until(() => output.filter((l) => l.startsWith("eeee")).length >= 10 * 1024, 10_000, "10 MB of stderr in the log");
    }
    // the session and the other plugin in it carry on
    expect((await calc.invoke("calc_multiply", { a: 3, b: 4 })).output.answer).toBe(12);
  } finally {
    await session.close();
  }
}

test.each(ROWS.map((r) => [`${r.export} × ${FAULT_NAMES[r.fault]}`, r] as const))(
  "%s",
  async (_name, row) => {
    using dir = tempDir();
    await run(row, dir.path);
    // nothing leaked: every string the last plugin host returned was freed exactly once
    const frees = join(dir.path, "frees");
    if (existsSync(frees)) {
      const counts = freeCounts(frees);
      expect(counts.freed).toBe(counts.returned);
    }
    // no orphan: no plugin host of the fixture is left
    await until(() => hostsOf(LIBRARY).length === 0, 5000, "every plugin host of the faulty fixture to be gone");
  },
  30_000,
);

// --- Cortex native plugins (issue 17): each misbehaviour in each function of the table ---

const CORTEX_LIBRARY = fixtureLibrary("cortex-basic");

async function runCortex(row: CortexRow, dir: string) {
  const hang = row.fault === "hang";
  const logs: string[] = [];
  const session = await openSession({
    env: { CXAGENT_FX_FAULT: `${row.where}:${row.fault}`, CXAGENT_FX_FREE_LOG: join(dir, "frees"), CXAGENT_FX_FAULT_ONCE: join(dir, "once") },
    startupMs: hang ? 1500 : 20_000,
    stopMs: hang ? 1000 : 20_000,
    onLog: (_p, _l, text) => logs.push(text),
  });
  const e = row.expected;
  try {
    const calc = await session.load(CALCULATOR);
    const loaded = await outcome(session.load(fixture("cortex-basic")));
    if (row.where === "init" || row.where === "info" || row.where === "descriptor") {
      if (!("error" in e)) throw new Error("a load row expects an error");
      expectError(loaded, e.error, e.says);
    } else {
      if (loaded instanceof CxError) throw loaded;
      if (row.where === "execute") {
        const r = await outcome(loaded.invoke("work", {}, { timeoutMs: hang ? 500 : 20_000 }));
        if ("error" in e) expectError(r, e.error, e.says);
        else {
          if (r instanceof CxError) throw r;
          expect(r.output.content).toBe("bad \ufffd bytes");
        }
        // after a crash, the next call starts a fresh plugin host, which behaves (CXAGENT_FX_FAULT_ONCE)
        if (row.fault === "segfault" || row.fault === "abort" || row.fault === "exit") expect((await loaded.invoke("work")).output.content).toBe("fine");
      } else {
        await session.unload("cortex-basic");
        if (!("stopLog" in e)) throw new Error("a drop row expects a log");
        expect(logs.some((l) => l.includes(e.stopLog))).toBe(true);
      }
    }
    expect((await calc.invoke("calc_multiply", { a: 3, b: 4 })).output.answer).toBe(12);
  } finally {
    await session.close();
  }
}

test.each(CORTEX_ROWS.map((r) => [`Cortex ${CORTEX_FUNCTION_NAMES[r.where]} × ${CORTEX_FAULT_NAMES[r.fault]}`, r] as const))(
  "%s",
  async (_name, row) => {
    using dir = tempDir();
    await runCortex(row, dir.path);
    const frees = join(dir.path, "frees");
    if (existsSync(frees)) {
      const counts = freeCounts(frees);
      expect(counts.freed).toBe(counts.returned);
    }
    await until(() => hostsOf(CORTEX_LIBRARY).length === 0, 5000, "every plugin host of the Cortex fixture to be gone");
  },
  30_000,
);
