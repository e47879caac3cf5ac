/**
 * The fault matrix of a module plugin: every misbehaviour × function of
 * fault-matrix.cases.ts's module column, through the real faulty-module fixture in its own plugin host.
 * Each row checks the outcome, that the session and a native plugin in it carry on, and that no
 * plugin host of the fixture is left.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { CxError, type Submit } from "../../src/index.ts";
import { CALCULATOR, hostsOf, openSession, ROOT, tempDir, until } from "../helpers.ts";
import { MODULE_FAULT_NAMES, MODULE_ROWS, type ModuleRow } from "./fault-matrix.cases.ts";

const BIG = 50 * 1024 * 1024;
const FOLDER = join(ROOT, "test/fixtures/modules/faulty-module");
const MODULE = join(FOLDER, "faulty-module.ts");

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

async function run(row: ModuleRow, dir: string) {
  const hang = row.fault === "hang" || row.fault === "spin";
  const timeoutMs = hang ? 500 : 20_000;
  const logs: string[] = [];
  const output: string[] = [];
  const submits: Submit[] = [];
  const session = await openSession({
    env: { CXAGENT_FX_FAULT: `${row.fn}:${row.fault}`, CXAGENT_FX_FAULT_ONCE: join(dir, "once") },
    startupMs: hang ? 1500 : 20_000,
    startMs: hang ? 1000 : 20_000,
    stopMs: hang ? 1000 : 20_000,
    gateMs: hang ? 300 : 20_000,
    pollMs: 50,
    permission: "once",
    onLog: (_p, _l, text) => logs.push(text),
    onOutput: (plugin, line) => plugin === "faulty-module" && output.push(line),
  });
  const e = row.expected;
  try {
    const calc = await session.load(CALCULATOR);
    const loaded = await outcome(session.load(FOLDER));
    if ("error" in e && (row.fn === "describe" || row.fn === "start")) {
      expectError(loaded, e.error, e.says);
    } else {
      if (loaded instanceof CxError) throw loaded;
      const plugin = loaded;
      plugin.onSubmit((s) => submits.push(s));
      switch (row.fn) {
        case "invoke": {
          const r = await outcome(plugin.invoke("work", {}, { timeoutMs }));
          if ("error" in e) expectError(r, e.error, e.says);
          else if ("result" in e) {
            if (r instanceof CxError) throw r;
            const content = r.output.content as string;
            if (e.result === "big") expect(content.length).toBe(BIG);
            else expect(content).toBe("fine");
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
          expect((await plugin.invoke("work")).output.content).toBe("fine"); // the next call works
          break;
        }
        case "poll": {
          if ("submit" in e) {
            await until(() => submits.length > 0, 10_000, "the submit");
            const goal = submits[0]!.goal;
            if (e.submit === "big") expect(goal.length).toBe(BIG);
            else expect(goal).toBe("polled");
          } else if ("pollLog" in e) {
            await until(() => logs.some((l) => l.startsWith(e.pollLog)), 5000, "the poll log");
            await until(() => submits.length > 0, 5000, "the next poll's submit"); // polling goes on
          } else if ("pollCrash" in e) {
            await until(() => logs.some((l) => l.includes(`ended unexpectedly (${e.pollCrash}) while no call was waiting`)), 5000, "the crash report");
            expect((await plugin.invoke("work")).output.content).toBe("fine");
          } else {
            expect((await plugin.invoke("work")).output.content).toBe("fine"); // poll hangs: other calls go on
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
            else expect(r.message).toBe("fine");
          }
          break;
        }
        case "stop": {
          await session.unload("faulty-module");
          if (!("stopLog" in e)) throw new Error("a stop row expects a log");
          const warned = logs.filter((l) => l.includes("stop()"));
          if (e.stopLog === null) expect(warned).toEqual([]);
          else expect(warned.some((l) => l.includes(e.stopLog!))).toBe(true);
          break;
        }
      }
      if (row.fault === "stdout") await until(() => output.filter((l) => l.includes(`noise from ${row.fn}`)).length >= 100, 5000, "the stdout lines in the log");
      if (row.fault === "stderr") await until(() => output.filter((l) => l.startsWith("eeee")).length >= 10 * 1024, 10_000, "10 MB of stderr in the log");
      // whatever it printed, the protocol stayed clean
      expect(logs.filter((l) => l.includes("not JSON") || l.includes("malformed"))).toEqual([]);
    }
    // the session and the native plugin in it carry on
    expect((await calc.invoke("calc_multiply", { a: 3, b: 4 })).output.answer).toBe(12);
  } finally {
    await session.close();
  }
}

test.each(MODULE_ROWS.map((r) => [`${r.fn} × ${MODULE_FAULT_NAMES[r.fault]}`, r] as const))(
  "%s",
  async (_name, row) => {
    using dir = tempDir();
    await run(row, dir.path);
    // no orphan: no plugin host of the fixture is left
    await until(() => hostsOf(MODULE).length === 0, 5000, "every plugin host of the faulty-module fixture to be gone");
  },
  30_000,
);
