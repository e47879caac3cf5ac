/**
 * examples/calculator-ts (issue 19 point 6): the calculator as a TypeScript plugin has the same
 * three tools and gates as examples/calculator/calculator.c, and answers exactly as it does —
 * texts, numbers, failures and error messages — so the difference between the two files is the
 * boundary, not the behaviour.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { CxError, type Plugin } from "../../src/index.ts";
import { CALCULATOR, openSession, ROOT } from "../helpers.ts";

const CALCULATOR_TS = join(ROOT, "examples/calculator-ts");

const OPERANDS: unknown[] = [
  0, -0, 1, -1, 0.1, 1 / 3, 2.5, 1.03125, 1e15, 1e16, 1e20, 1e-5, 0.00012345, 123456789.123456789, 5e-324, 1.7976931348623157e308,
  " 3 ", "3.5", "-0", "abc", "", true, null, {}, [],
];
const SECOND: unknown[] = [0, 2, -7, 0.1, 1e300, "x", undefined];
const TOOLS = ["calc_add", "calc_multiply", "calc_divide"];

/** What a call answered, with the plugin's own name taken out (the two differ only there). */
async function answer(plugin: Plugin, tool: string, args: Record<string, unknown>): Promise<unknown> {
  let value: unknown;
  try {
    const r = await plugin.invoke(tool, args);
    value = { success: r.success, errorMessage: r.errorMessage, output: r.output };
  } catch (error) {
    value = { error: (error as CxError).code, message: (error as CxError).message };
  }
  return unnamed(plugin, value);
}

/** The gate's decision, or the refusal of arguments that break the tool's inputSchema (for both alike). */
async function decision(plugin: Plugin, tool: string, args: Record<string, unknown>): Promise<unknown> {
  try {
    return unnamed(plugin, await plugin.gate(tool, args));
  } catch (error) {
    return unnamed(plugin, { error: (error as CxError).code, message: (error as CxError).message });
  }
}

const unnamed = (plugin: Plugin, value: unknown) => JSON.parse(JSON.stringify(value).replaceAll(plugin.name, "<plugin>"));

test("the TypeScript calculator answers every call and gate exactly as the C one, at each precision", async () => {
  await using native = await openSession({ permission: "once" });
  await using module = await openSession({ permission: "once" });
  for (const precision of [4, 0, 12, "2", 2.5]) {
    const c = await native.load(CALCULATOR, { settings: { precision } });
    const ts = await module.load(CALCULATOR_TS, { settings: { precision } });
    expect(ts.manifest).toEqual({ ...c.manifest, name: "calculator-ts" });
    let calls = 0;
    for (const a of OPERANDS) {
      for (const b of SECOND) {
        const args = b === undefined ? { a } : { a, b };
        for (const tool of TOOLS) {
          expect({ tool, args, answer: await answer(ts, tool, args) }).toEqual({ tool, args, answer: await answer(c, tool, args) });
          expect({ tool, args, gate: await decision(ts, tool, args) }).toEqual({ tool, args, gate: await decision(c, tool, args) });
          calls++;
        }
      }
    }
    expect(calls).toBe(OPERANDS.length * SECOND.length * TOOLS.length);
    // an unknown tool is refused by the host before either plugin hears of it
    expect(await answer(ts, "calc_pow", { a: 1, b: 2 })).toEqual(await answer(c, "calc_pow", { a: 1, b: 2 }));
    await native.unload(c.name);
    await module.unload(ts.name);
  }
}, 60_000);
