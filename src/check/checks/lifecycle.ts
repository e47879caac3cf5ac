/**
 * Loading and the lifecycle: the handshake, describe against the sidecar (every difference), start
 * with empty settings and with bad ones, and stop after a start, without one, and after a failed one.
 */
import { checkManifest, CONTRACT_CURRENT, CONTRACT_OLDEST } from "../../protocol/manifest.ts";
import { allDifferences } from "../../session/compare.ts";
import { isBreach, outcomeOf } from "../answers.ts";
import { type CheckContext, firstLine, loadCheck } from "../context.ts";
import { CheckHost } from "../host.ts";
import { profileOf } from "../../kinds/index.ts";
import { fail, oneLine, pass, plural, skip, type Verdict, warn } from "../report.ts";

const isContractRefusal = (message: string) => /pluginContract/.test(message) && /abi_version/.test(message);

export async function checkHandshake(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (!(first instanceof Error)) {
    return pass(`cxagent_plugin_abi_version returned ${first.host.ready.contract}, within ${CONTRACT_OLDEST}..${CONTRACT_CURRENT}, and equal to the manifest's pluginContract`);
  }
  const message = firstLine(first.message);
  if (first.code === "E_HANDSHAKE" || (first.code === "E_MANIFEST" && isContractRefusal(first.message))) {
    return fail(message, `return CXAGENT_PLUGIN_CONTRACT (${CONTRACT_CURRENT}) from cxagent_plugin_abi_version, and the same number as the manifest's "pluginContract"`);
  }
  if (first.code === "E_LOAD" && /does not export/.test(first.message)) return skip("the library was refused before its handshake: it lacks mandatory exports (see exports)");
  if (first.code === "E_MANIFEST") return pass(`the handshake is in range (describe's manifest was then refused: see describe)`);
  return fail(oneLine(first.message), first.hint ?? "the library must load with dlopen and answer cxagent_plugin_abi_version and describe without crashing");
}

export async function checkDescribe(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (first instanceof Error) {
    if (first.code === "E_MANIFEST" && !isContractRefusal(first.message)) {
      return fail(oneLine(first.message), "return from cxagent_plugin_describe exactly the sidecar's manifest (compiling the sidecar into the library keeps them one)");
    }
    if (first.code === "E_CRASHED" && /cxagent_plugin_describe/.test(first.message)) return fail(firstLine(first.message), "describe must return the manifest, a fresh string, without crashing");
    // A module plugin has no handshake check: its load failing (no usable default export, a throw
    // while importing) is failed here, or nothing would fail it.
    if (!profileOf(ctx.kind).handshake) return fail(`the module did not load: ${oneLine(first.message)}`, first.hint ?? "default-export definePlugin({ start, invoke, stop }) from \"cxagent\", and import without throwing");
    return skip(`the plugin did not get as far as describe (see handshake)`);
  }
  const described = checkManifest(first.host.ready.manifest);
  if (!described.ok) return fail("describe returned an invalid manifest", "return from cxagent_plugin_describe exactly the sidecar's manifest");
  const differences = allDifferences(ctx.sidecar!, described.manifest);
  if (differences.length) {
    return fail(`${plural(differences.length, "difference")} between the sidecar and what describe returned: ${differences.join("; ")}`,
      `make ${ctx.location.sidecar} and cxagent_plugin_describe agree; compiling the sidecar into the library keeps them one`);
  }
  return pass("describe returned the sidecar's manifest (compared structurally: every key a person approved)");
}

export async function checkStart(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (first instanceof Error) return skip(`the plugin did not load (see ${loadCheck(ctx)})`);
  const outcome = outcomeOf(first.start);
  if (outcome.kind === "ok") return pass(`start answered {"ok": true} to a context with empty settings ({}) in ${Math.round(first.start.ms)} ms`);
  if (outcome.kind === "refused") {
    return fail(`start refused a context with empty settings ({}): ${outcome.text}`, "start with defaults when a setting is missing: a user who configures nothing gets settings {}");
  }
  return fail(`start, with empty settings ({}), ${outcome.text}`, "start with defaults when a setting is missing, and answer an envelope: {\"ok\": true}");
}

/** Settings a user could write that no plugin expects: not an object, and the configured ones with each value's type changed. */
function badSettings(configured: unknown): unknown[] {
  const out: unknown[] = [["not", "an", "object"]];
  if (configured !== null && typeof configured === "object" && !Array.isArray(configured) && Object.keys(configured).length) {
    out.push(Object.fromEntries(Object.entries(configured).map(([k, v]) => [k, typeof v === "string" ? 12345 : typeof v === "number" ? "not a number" : typeof v === "boolean" ? "not a boolean" : 0])));
  }
  return out;
}

export async function checkBadSettings(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (first instanceof Error) return skip(`the plugin did not load (see ${loadCheck(ctx)})`);
  const breaches: string[] = [];
  const refusals: string[] = [];
  const tried: string[] = [];
  for (const settings of badSettings(ctx.configuredSettings)) {
    const host = await ctx.open();
    if (!(host instanceof CheckHost)) return fail(`a second plugin host was refused: ${firstLine(host.message)}`, "the plugin must load the same way every time");
    const answer = await host.start(settings, ctx.scratch, ctx.timeouts.startMs);
    ctx.starts.push({ situation: "bad settings", settings, answer });
    const outcome = outcomeOf(answer);
    const shown = JSON.stringify(settings);
    tried.push(shown);
    if (isBreach(outcome)) breaches.push(`with settings ${shown}, start ${outcome.text}`);
    else if (outcome.kind === "refused") refusals.push(`with settings ${shown}, start refused: ${outcome.text}`);
    host.sample();
    const stop = await host.close(true, ctx.timeouts.stopMs);
    if (stop) ctx.stops.push({ situation: outcome.kind === "ok" ? "after a start with bad settings" : "after a failed start", answer: stop });
  }
  const fix = "read each setting with a fallback: a value that is missing or of the wrong type means the default (the header's advice at cxagent_plugin_start)";
  if (breaches.length) return fail(breaches.join("; "), fix);
  if (refusals.length) return warn(`${refusals.join("; ")}; the load fails for a user with a typo in config.json`, fix);
  return pass(`start fell back and answered {"ok": true} with settings ${tried.join(" and ")}`);
}

export async function checkStop(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (first instanceof Error) return skip(`the plugin did not load (see ${loadCheck(ctx)})`);
  await ctx.stopMain();
  // A host that never ran start: stop must be safe whether or not start succeeded.
  const host = await ctx.open();
  if (host instanceof CheckHost) {
    host.sample();
    const answer = await host.close(true, ctx.timeouts.stopMs);
    if (answer) ctx.stops.push({ situation: "without a start", answer });
  }
  const stops = ctx.stops.filter((s) => s.situation !== "at the end of the check");
  const breaches: string[] = [];
  const refusals: string[] = [];
  for (const { situation, answer } of stops) {
    const outcome = outcomeOf(answer);
    if (isBreach(outcome)) breaches.push(`stop ${situation} ${outcome.text}`);
    else if (outcome.kind === "refused") refusals.push(`stop ${situation} answered ok:false: ${outcome.text}`);
  }
  const fix = "make stop safe in every state: after start, without start and after a failed one; release only what was acquired, and answer {\"ok\": true}";
  if (breaches.length) return fail(breaches.join("; "), fix);
  if (refusals.length) return warn(refusals.join("; "), fix);
  const situations = [...new Set(stops.map((s) => s.situation))];
  return pass(`stop answered {"ok": true} ${situations.join(", ")}`);
}
