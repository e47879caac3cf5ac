/**
 * A plugin's sandbox at load (issue 39): its declaration (the sidecar's `sandbox`, or a Cortex
 * manifest.toml's `[cxagent.sandbox]`), resolved for this session, to the launcher's command.
 * No declaration: the host starts as before, unconfined, and says so (describe, list, the prompt).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateFolder } from "../host/private-folder.ts";
import { policyOf, type Sandboxed, sandboxedCommand } from "../sandbox/command.ts";
import type { HostSandbox, SandboxDeclaration } from "../protocol/sandbox.ts";
import type { Inspection } from "./inspect.ts";

export interface SandboxSetting {
  cwd: string;
  stateDir: string;
  /** The session's private folder (its snapshots'): each host's ${tmp} is made in it. */
  privateDir: string | null;
}

/** The launcher's command and layers for the plugin `inspection` found, or null when it declares no sandbox. */
export function sandboxOf(inspection: Inspection, hostCommand: readonly string[], s: SandboxSetting): Sandboxed | null {
  const declared = inspection.sandbox.effective;
  return declared === null ? null : sandboxUnder(declared, inspection, hostCommand, s);
}

/** The launcher's command and layers for a host of `inspection`'s plugin under exactly `declared` (its effective sandbox, or a call's lease). */
export function sandboxUnder(declared: SandboxDeclaration, inspection: Inspection, hostCommand: readonly string[], s: SandboxSetting): Sandboxed {
  const name = inspection.manifest.name;
  const tmpBase = ensurePrivateFolder(s.privateDir ?? `${s.stateDir}/run`, "sandboxed plugin hosts' private folders are made");
  // ${cache} is cxagent's to make: a folder of the plugin's own under the state folder.
  if ([...declared.fs.read, ...declared.fs.write].some((p) => p.startsWith("${cache}"))) mkdirSync(join(s.stateDir, "cache", name), { recursive: true, mode: 0o700 });
  const policy = policyOf(declared, { plugin: name, project: s.cwd, folder: inspection.loadSet.realFolder, stateDir: s.stateDir, tmpBase, accepts: inspection.sandbox.accepts });
  return sandboxedCommand(hostCommand, policy);
}

/**
 * A plugin whose sandbox confines each call's process (its profile's sandboxesCalls: a Cortex
 * process plugin): its host starts as it is, told on its command line (--call-sandbox) the
 * launcher's command (the cxagent command that runs `__sandbox`) and the policy, planned here
 * already (a missing layer refused the load). Its layers are reported as any sandboxed host's;
 * what a limit did to a call is that call's failure, not the host's.
 */
export function callSandboxOf(sandboxed: Sandboxed, hostCommand: readonly string[]): { argument: string; sandbox: HostSandbox } {
  const at = hostCommand.indexOf("__host");
  const launcher = hostCommand.slice(0, at < 0 ? hostCommand.length : at);
  return { argument: JSON.stringify({ launcher, policy: sandboxed.policy }), sandbox: { layers: sandboxed.layers, ended: () => null } };
}
