/**
 * Settling a call that needs permission (SPEC §7), once its decision is known: a stored grant or
 * no question lets it go ahead; else the caller's handler (a prompt, a policy) or fixed answer
 * decides, and an Always stores a grant where Always is offered. Apart from plugin.ts so that the
 * handle's file keeps its size.
 */
import { CxError } from "../errors.ts";
import { preview } from "../protocol/issues.ts";
import { deniedResult, type JobResult } from "../protocol/result.ts";
import type { GivenReference } from "../results/refs.ts";
import { type GateDecision, PERMISSION_ANSWERS, type PermissionAnswer, type PermissionHandler } from "./gate.ts";
import type { GrantStore, Leases } from "./plugin-spec.ts";

/** The denied result, or null to go ahead. */
export async function settlePermission(
  call: { plugin: string; tool: string; arguments: Record<string, unknown>; decision: GateDecision; references: GivenReference[] },
  permission: PermissionHandler | PermissionAnswer | undefined,
  grants: GrantStore,
): Promise<JobResult | null> {
  const { plugin, tool, arguments: args, decision, references } = call;
  if (!decision.ask || decision.granted) return null;
  if (permission === undefined) {
    return deniedResult("policy", `${tool} was not run: it needs permission (${decision.display}) and there was no one to ask`);
  }
  let answer = typeof permission === "function" ? await permission({ plugin, tool, arguments: args, decision, references }) : permission;
  if (!(PERMISSION_ANSWERS as readonly string[]).includes(answer)) {
    throw new CxError("E_INVALID_INPUT", `the permission answer for ${tool} was ${preview(JSON.stringify(answer) ?? String(answer))}, not "once", "always" or "deny"; the call was not made`, { hint: "answer permission with once, always or deny" });
  }
  if (answer === "always" && !decision.alwaysOffered) answer = "once";
  if (answer === "deny") return deniedResult("user", `${tool} was not run: permission was denied`);
  if (answer === "always") grants.add(decision.rule!);
  return null;
}

/** How the prompt introduces a lease: the sandbox the call runs under, in words. */
export const LEASE_WORDS = "this call runs confined to: ";

/**
 * A decision whose gate answered a sandbox lease (issue 39 point 6): the lease settled against the
 * plugin's effective sandbox (`leases.settle`, which refuses one that would widen with E_SANDBOX)
 * and shown in the question. Without `leases` no host can serve a lease, so the call is refused.
 */
export function settleLease(plugin: string, leases: Leases | undefined, decision: GateDecision): GateDecision {
  if (!decision.lease) return decision;
  if (!leases) {
    throw new CxError("E_SANDBOX", `plugin '${plugin}': its gate answered a sandbox lease for this call, and this plugin's hosts cannot be started under one, so the call was not made`, {
      hint: "load the plugin through a Session, which starts leased hosts through the sandbox launcher",
      details: { plugin, lease: decision.lease },
    });
  }
  const settled = leases.settle(decision.lease);
  return { ...decision, lease: settled.sandbox, display: `${decision.display ?? ""}\n${LEASE_WORDS}${settled.words}` };
}
