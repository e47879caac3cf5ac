/**
 * Per-call sandbox leases (issue 39 point 6), as the session settles them: a "dynamic" gate may
 * answer with a narrower `sandbox` for one call; it is held to the plugin's effective sandbox
 * (what it declares, narrowed by config.json and the project's), refused with E_SANDBOX when any
 * entry of it would widen that, else intersected with it, and the call is served by a host
 * started through the launcher with exactly the result (host/lease-pool.ts pools them).
 */
import { CxError } from "../errors.ts";
import type { Leases } from "../host/plugin-spec.ts";
import { intersect } from "../sandbox/intersect.ts";
import { wideningsOf } from "../sandbox/widening.ts";
import type { Inspection } from "./inspect.ts";
import { sandboxWords } from "./sandbox-facts.ts";
import { type SandboxSetting, sandboxUnder } from "./sandbox.ts";

/** How long a leased host waits for its next call before it is stopped, unless the plugin's config entry says (`idleMs`). */
export const LEASE_IDLE_MS = 30_000;

export function leasesOf(inspection: Inspection, hostCommand: readonly string[], setting: SandboxSetting, idleMs = LEASE_IDLE_MS): Leases {
  const name = inspection.name;
  const effective = inspection.sandbox.effective;
  return {
    idleMs,
    settle(lease) {
      const widenings = wideningsOf(lease, effective);
      if (widenings.length) {
        const problems = widenings.map((w) => ({ path: `sandbox.${w.at}`, message: `sandbox.${w.at}: ${w.message}` }));
        throw new CxError("E_SANDBOX", `plugin '${name}': its gate answered a sandbox lease that would widen the plugin's sandbox, so the call was not made:\n${problems.map((p) => `  - ${p.message}`).join("\n")}`, {
          hint: `a lease may only narrow what the plugin may touch (${sandboxWords(effective)}); fix the plugin's gate, or its sandbox declaration`,
          details: { plugin: name, problems },
        });
      }
      const sandbox = effective ? intersect(effective, lease) : lease;
      return { sandbox, words: sandboxWords(sandbox) };
    },
    host(sandbox) {
      const sandboxed = sandboxUnder(sandbox, inspection, hostCommand, setting);
      return { hostCommand: sandboxed.command, sandbox: sandboxed };
    },
  };
}
