/**
 * Using cxagent from a script: `npx bun examples/script.ts`, after `npm run examples` and after
 * approving the calculator once (`npx cxagent approve examples/calculator`: nothing of a plugin
 * runs before a person approved its exact files; the library never asks by itself — an
 * unapproved load throws E_NOT_APPROVED, whose `next` names the hash to approve).
 *
 * A session loads plugins, each in its own process; `await using` stops them all at the end,
 * even when something throws.
 */
import { CxError, Session } from "cxagent";

await using session = await Session.open({ cwd: process.cwd() });
const calc = await session.load("examples/calculator", { settings: { precision: 2 } });

console.log(`${calc.name} ${calc.manifest.version}: ${calc.tools.map((t) => t.name).join(", ")}`);

const product = await calc.invoke("calc_multiply", { a: 6, b: 7 });
console.log(product.output.content, "→ answer", product.output.answer);

// A tool can fail on its own terms: that is a result with success:false, not an exception.
// calc_divide asks for a zero divisor; a script answers such questions itself (default: deny).
const quotient = await calc.invoke("calc_divide", { a: 1, b: 0 }, { permission: ({ decision }) => (console.log(`allowing: ${decision.display}`), "once") });
console.log(quotient.success ? quotient.output.content : `failed: ${quotient.errorMessage}`);

// A call that cannot produce a result at all throws a CxError with a stable code.
try {
  await calc.invoke("calc_multiply", { a: "six", b: 7 });
} catch (error) {
  if (error instanceof CxError) console.log(`${error.code}: ${error.message}`);
  else throw error;
}
