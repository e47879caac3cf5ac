/**
 * What a Cortex plugin says about itself, and the cxagent manifest made from it. `plugin_info`
 * and each `tool_descriptor(i)` are JSON the plugin's running code returns (Cortex has no sidecar);
 * they are read strictly, every problem named by its path, and mapped:
 *
 *   plugin_info {name, version, description}    → name, version (description: shown, not served)
 *   descriptor {name, description, input_schema} → a tool {name, description, inputSchema}
 *   capabilities.effects[].confirmation          → gated: true when any effect says "always" or
 *                                                  "on_risk" (never less careful than Cortex);
 *                                                  "always" also means Always is never offered;
 *                                                  all "never", or no effects: gated: false
 *   timeout_secs                                 → that tool's default invoke deadline (ms), which
 *                                                  the parent enforces (the startup line's deadlines)
 *
 * instructions none, commands none, spawns and client false: a Cortex plugin declares none of them.
 */
import * as v from "valibot";
import { describeValue, preview, type Problem, toProblems } from "../protocol/issues.ts";
import { CONTRACT_CURRENT } from "../protocol/manifest.ts";

/** The Cortex native ABI this host speaks (NATIVE_ABI_VERSION of the Cortex SDK). */
export const CORTEX_ABI = 1;

/** The longest default deadline a descriptor can give: what a timer can wait (2^31 - 1 ms), in whole seconds. */
export const MAX_TIMEOUT_SECS = Math.floor(0x7fffffff / 1000);

const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

export const PluginInfoSchema = v.object({
  name: v.string(),
  version: v.string(),
  description: v.string(),
});
export type PluginInfo = v.InferOutput<typeof PluginInfoSchema>;

const EffectSchema = v.object({
  kind: v.string(),
  target: v.optional(v.string()),
  reversibility: v.string(),
  confirmation: v.picklist(["never", "on_risk", "always"], (i) => `must be "never", "on_risk" or "always", not ${JSON.stringify(i.input)}`),
  dry_run: v.string(),
});

export const DescriptorSchema = v.object({
  name: v.string(),
  description: v.string(),
  input_schema: v.custom<Record<string, unknown>>(isPlainObject, "must be a JSON Schema object"),
  timeout_secs: v.optional(
    v.nullable(v.pipe(v.number(), v.integer("must be a whole number of seconds"), v.minValue(1, "must be at least 1 second"))),
  ),
  capabilities: v.optional(
    v.object({
      emits_progress: v.optional(v.boolean()),
      emits_observer_text: v.optional(v.boolean()),
      background_safe: v.optional(v.boolean()),
      effects: v.optional(v.array(EffectSchema)),
    }),
  ),
});
export type Descriptor = v.InferOutput<typeof DescriptorSchema>;

/** Reads one of the plugin's JSON texts against `schema`, naming every problem by its path. */
export function readCortexJson<T extends v.GenericSchema>(schema: T, text: string, what: string): { ok: true; value: v.InferOutput<T> } | { ok: false; problems: Problem[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [{ path: "", message: `it is not valid JSON (${(error as Error).message}): ${preview(text)}` }] };
  }
  if (!isPlainObject(parsed)) return { ok: false, problems: [{ path: "", message: `it is ${describeValue(parsed)}, not a JSON object` }] };
  const result = v.safeParse(schema, parsed);
  if (result.success) return { ok: true, value: result.output };
  // A member that is missing reads as such, not as a value of the wrong type.
  const problems = toProblems(result.issues, what).map((p, i) => (result.issues[i]?.input === undefined && p.path ? { ...p, message: `${p.path} is required` } : p));
  return { ok: false, problems };
}

/** How a tool's declared effects gate it (see the table above). */
export function gatingOf(descriptor: Descriptor): { gated: boolean; alwaysAskable: boolean } {
  const confirmations = (descriptor.capabilities?.effects ?? []).map((e) => e.confirmation);
  const always = confirmations.includes("always");
  return { gated: always || confirmations.includes("on_risk"), alwaysAskable: !always };
}

/** The tool's default invoke deadline in ms, or null when it declares none. */
export function deadlineOf(descriptor: Descriptor): number | null {
  const secs = descriptor.timeout_secs;
  return secs === undefined || secs === null ? null : Math.min(secs, MAX_TIMEOUT_SECS) * 1000;
}

/** The cxagent manifest of a Cortex plugin (unchecked: the caller validates it like any other). */
export function synthesizeManifest(info: PluginInfo, descriptors: readonly Descriptor[]): Record<string, unknown> {
  return {
    pluginContract: CONTRACT_CURRENT,
    name: info.name,
    version: info.version,
    instructions: null,
    spawns: false,
    client: false,
    tools: descriptors.map((d) => ({ name: d.name, description: d.description, inputSchema: d.input_schema, ...gatingOf(d) })),
    commands: [],
  };
}
