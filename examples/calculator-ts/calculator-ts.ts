/*
 * calculator-ts.ts -- the calculator of examples/calculator/calculator.c, as a TypeScript plugin:
 * the same three tools, the same gates, the same answers and messages. Read the two side by
 * side: what the C file spends on JSON, buffers and freeing is what the boundary costs; here
 * arguments arrive as objects, results leave as objects, and an error is thrown.
 *
 *   - the manifest lives in calculator-ts.plugin.json, the sidecar cxagent reads before any code
 *     runs; without a describe function that file is the manifest;
 *   - settings read in start ("precision", with a default for every mistake);
 *   - the three gating modes: calc_add always asks (gated: true), calc_multiply never asks
 *     (gated: false), calc_divide asks through gate only when the divisor is zero ("dynamic");
 *   - both failure channels: a thrown error when the call itself is wrong (an unknown tool, a
 *     missing argument), and a result with success: false when the tool ran and refused
 *     (division by zero).
 *
 * Nothing to build: cxagent runs it with the Bun inside it.
 */
import { definePlugin, type JobResultInput } from "cxagent";

const PRECISION = { default: 4, min: 0, max: 12 };

/** Decimal places in the text a model reads. Written only by start. */
let precision = PRECISION.default;

const TOOLS = { calc_add: "+", calc_multiply: "*", calc_divide: "/" } as const;
type Tool = keyof typeof TOOLS;

/** x with `digits` significant digits, as C's "%.*g" writes it: 0.1, 1e+20, 1.5e-05. */
function formatG(x: number, digits: number): string {
  const [mantissa = "", e = "0"] = x.toExponential(digits - 1).split("e");
  const exponent = Number(e);
  const trim = (text: string) => (text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text);
  if (exponent < -4 || exponent >= digits) return `${trim(mantissa)}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  return trim(x.toFixed(digits - 1 - exponent));
}

/** The shortest such text, from 15 digits up, that reads back as exactly x. */
function formatExact(x: number): string {
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  for (const digits of [15, 16]) {
    const text = formatG(x, digits);
    if (Number(text) === x) return text;
  }
  return formatG(x, 17);
}

/** x for a human or a model to read: like formatExact, without a minus zero. */
const formatOperand = (x: number) => formatExact(x === 0 ? 0 : x);

/** x rounded to `places` decimals, trailing zeros trimmed: 5, 0.3333, -2.5. Ties go to even, as printf's do. */
function formatRounded(x: number, places: number): string {
  if (x >= 1e15 || x <= -1e15) return formatOperand(x);
  let text = x.toFixed(places);
  const exact = x.toFixed(100);
  const cut = exact.indexOf(".") + places + (places > 0 ? 1 : 0);
  if (/^50*$/.test(exact.slice(exact.indexOf(".") + 1 + places))) {
    const down = exact.slice(0, cut);
    if (Number(down.at(-1)) % 2 === 0) text = down;
  }
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text === "-0" ? "0" : text;
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A number, or a string holding one (" 3 " included); else what is wrong with it. */
function readNumber(value: unknown): number | string {
  if (value === undefined) return "missing";
  if (typeof value === "number") return Number.isFinite(value) ? value : "is too large to represent";
  if (typeof value === "string") {
    const text = value.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, "");
    if (!JSON_NUMBER.test(text)) return "must be a number, but is a string that does not hold one";
    const n = Number(text);
    return Number.isFinite(n) ? n : "is too large to represent";
  }
  if (typeof value === "boolean") return "must be a number, but is a boolean";
  if (value === null) return "must be a number, but is null";
  return Array.isArray(value) ? "must be a number, but is an array" : "must be a number, but is an object";
}

/** Both operands, or the error naming the tool and every argument that is wrong. */
function readOperands(tool: string, args: Record<string, unknown>): { a: number; b: number } {
  const a = readNumber(args.a);
  const b = readNumber(args.b);
  if (typeof a === "number" && typeof b === "number") return { a, b };
  const problem = (name: string, status: number | string) =>
    typeof status === "number" ? [] : [status === "missing" ? `missing required argument '${name}' (a number)` : `argument '${name}' ${status}`];
  throw new Error(`${tool}: ${[...problem("a", a), ...problem("b", b)].join("; ")}`);
}

function isTool(tool: string): tool is Tool {
  return Object.hasOwn(TOOLS, tool);
}

/** A result with success: false: errorMessage for people, content for the model. */
const toolFailure = (errorMessage: string, content: string): JobResultInput => ({ success: false, errorMessage, output: { content } });

function calculate(tool: Tool, a: number, b: number): JobResultInput {
  const symbol = TOOLS[tool];
  const [aText, bText] = [formatOperand(a), formatOperand(b)];
  if (tool === "calc_divide" && b === 0) {
    return toolFailure(`division by zero: ${aText} / 0 is undefined`, `Cannot divide ${aText} by zero.`);
  }
  const answer = tool === "calc_add" ? a + b : tool === "calc_multiply" ? a * b : a / b;
  if (!Number.isFinite(answer)) {
    return toolFailure(`overflow: ${aText} ${symbol} ${bText} is too large to represent`, `The result of ${aText} ${symbol} ${bText} is too large to represent.`);
  }
  return { success: true, output: { content: `${aText} ${symbol} ${bText} = ${formatRounded(answer, precision)}`, answer } };
}

export default definePlugin({
  /* settings.precision: an integer, clamped to 0..12. Anything else (a string, a fraction, null,
     no settings at all) quietly means the default. */
  start({ settings }) {
    const value = (settings as { precision?: unknown } | null)?.precision;
    precision = typeof value === "number" && Number.isInteger(value) ? Math.min(PRECISION.max, Math.max(PRECISION.min, value)) : PRECISION.default;
  },

  invoke(tool, args) {
    if (!isTool(tool)) throw new Error(`calculator has no tool named '${tool}'; it offers calc_add, calc_multiply and calc_divide`);
    const { a, b } = readOperands(tool, args);
    return calculate(tool, a, b);
  },

  gate(tool, args) {
    // Only division has a dangerous case: a zero divisor.
    if (tool !== "calc_divide") return null;
    const a = readNumber(args.a);
    const b = readNumber(args.b);
    if (typeof a !== "number" || b !== 0) return null; // fine, or invoke will refuse the arguments anyway
    return { display: `calc_divide: divide ${formatOperand(a)} by zero` };
  },

  stop() {},
});
