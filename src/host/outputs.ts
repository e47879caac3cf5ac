/**
 * A plugin's calls and the result store (issue 41), apart from the handle (plugin.ts): references
 * in the arguments replaced before they are checked, the read cap of each call, and the delivery
 * cap applied to what it answers.
 */
import type { JobResult } from "../protocol/result.ts";
import { deliver, DELIVERY_CAP_MIN } from "../results/deliver.ts";
import { type GivenReference, referenceLines, substituteRefs } from "../results/refs.ts";
import type { GateDecision } from "./gate.ts";
import { CxError } from "../errors.ts";
import type { InvokeOptions, PluginSpec } from "./plugin-spec.ts";
import { checkedReadCap } from "./read-cap.ts";

export class CallOutputs {
  constructor(private readonly spec: PluginSpec) {}

  /** The arguments with their references replaced (none without a store), and those references. */
  arguments(args: unknown): { args: unknown; references: GivenReference[] } {
    return this.spec.results ? substituteRefs(args, this.spec.results) : { args, references: [] };
  }

  /** A call's read cap: its own, else its plugin's, checked; none means the line cap. */
  readCap(options: InvokeOptions): number | undefined {
    return checkedReadCap(options.readCapBytes ?? this.spec.outputs?.readCapBytes, "the read cap (readCapBytes)");
  }

  /**
   * A call's delivery cap: its own (0: none), else its plugin's, else its front end's default;
   * none in the library unless asked.
   */
  deliveryCap(options: InvokeOptions): number | undefined {
    const cap = options.maxOutputBytes ?? this.spec.outputs?.maxOutputBytes ?? options.defaultMaxOutputBytes;
    if (cap === undefined || cap === 0) return undefined;
    if (!Number.isInteger(cap) || cap < DELIVERY_CAP_MIN) {
      throw new CxError("E_INVALID_INPUT", `the delivery cap (maxOutputBytes) is ${cap}; it must be a whole number of bytes, at least ${DELIVERY_CAP_MIN}, or 0 for none`);
    }
    return cap;
  }

  /** What the caller gets of `result` (see results/deliver.ts). */
  deliver(result: JobResult, tool: string, cap: number | undefined): JobResult {
    const store = this.spec.results;
    return store && cap ? deliver(result, cap, store, { plugin: this.spec.name, tool }) : result;
  }
}

/** The decision as a prompt shows it: with a line for each reference its arguments held (size, origin). */
export function withReferences(decision: GateDecision, references: readonly GivenReference[]): GateDecision {
  if (!references.length || !decision.ask) return decision;
  return { ...decision, display: `${decision.display ?? ""}\n${referenceLines(references)}`.trimStart() };
}
