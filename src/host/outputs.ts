/**
 * A plugin's calls and the result store (issue 41), apart from the handle (plugin.ts): references
 * in the arguments replaced before they are checked, the read cap of each call, the spill while
 * reading, and the delivery cap applied to what it answers.
 */
import type { JobResult } from "../protocol/result.ts";
import { deliver, deliverSpilled, DELIVERY_CAP_MIN } from "../results/deliver.ts";
import { type GivenReference, referenceLines, substituteRefs } from "../results/refs.ts";
import { ContentSpill } from "../results/spill.ts";
import { CxError } from "../errors.ts";
import type { GateDecision } from "./gate.ts";
import type { InvokeOptions, PluginSpec } from "./plugin-spec.ts";
import { checkedReadCap } from "./read-cap.ts";

/** What one call needs of the outputs: its caps, its arguments with references replaced, its spill. */
export interface PreparedCall {
  readCap: number | undefined;
  deliveryCap: number | undefined;
  args: unknown;
  references: GivenReference[];
  spill: ContentSpill | undefined;
}

export class CallOutputs {
  constructor(private readonly spec: PluginSpec) {}

  /**
   * A call's caps (checked) and its arguments with every reference replaced; with a delivery cap
   * and a store, the spill its reply streams through when it does not arrive in one read.
   */
  prepare(options: InvokeOptions, args: unknown): PreparedCall {
    const readCap = checkedReadCap(options.readCapBytes ?? this.spec.outputs?.readCapBytes, "the read cap (readCapBytes)");
    const deliveryCap = this.deliveryCap(options);
    const given = this.spec.results ? substituteRefs(args, this.spec.results) : { args, references: [] };
    // A plugin given secrets has what it spills redacted as it streams, before anything is written
    // (issue 40): by the redactor its other text passes, which knows a secret once it is resolved.
    const redact = this.spec.secrets?.redactor.stream();
    const spill = this.spec.results && deliveryCap ? new ContentSpill(this.spec.results, deliveryCap, redact) : undefined;
    return { readCap, deliveryCap, ...given, spill };
  }

  /** The arguments with every reference replaced (a gate's decision sees what a call would). */
  substitute(args: unknown): unknown {
    return this.spec.results ? substituteRefs(args, this.spec.results).args : args;
  }

  /**
   * A call's delivery cap: its own (0: none), else its plugin's, else its front end's default;
   * none in the library unless asked.
   */
  private deliveryCap(options: InvokeOptions): number | undefined {
    const cap = options.maxOutputBytes ?? this.spec.outputs?.maxOutputBytes ?? options.defaultMaxOutputBytes;
    if (cap === undefined || cap === 0) return undefined;
    if (!Number.isInteger(cap) || cap < DELIVERY_CAP_MIN) {
      throw new CxError("E_INVALID_INPUT", `the delivery cap (maxOutputBytes) is ${cap}; it must be a whole number of bytes, at least ${DELIVERY_CAP_MIN}, or 0 for none`);
    }
    return cap;
  }

  /** The call's reply; a call that fails leaves nothing of its spill behind. */
  guard<T>(call: PreparedCall, reply: Promise<T>): Promise<T> {
    return call.spill ? reply.catch((error: unknown) => (call.spill!.discard(), Promise.reject(error))) : reply;
  }

  /** What the caller gets of `result` (see results/deliver.ts): from the spill when the reply streamed through it. */
  deliver(result: JobResult, tool: string, call: PreparedCall): JobResult {
    const store = this.spec.results;
    const cap = call.deliveryCap;
    if (!store || !cap) return result;
    const origin = { plugin: this.spec.name, tool };
    const spilled = call.spill?.outcome(origin);
    if (spilled?.kind === "whole") return deliver({ ...result, output: { ...result.output, content: spilled.text } }, cap, store, origin);
    if (spilled?.kind === "spilled") return deliverSpilled(result, cap, spilled.stored, spilled.head, spilled.tail);
    return deliver(result, cap, store, origin);
  }
}

/** The decision as a prompt shows it: with a line for each reference its arguments held (size, origin). */
export function withReferences(decision: GateDecision, references: readonly GivenReference[]): GateDecision {
  if (!references.length || !decision.ask) return decision;
  return { ...decision, display: `${decision.display ?? ""}\n${referenceLines(references)}`.trimStart() };
}
