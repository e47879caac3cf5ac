/**
 * Loading a plugin, as one pipeline of named steps (SPEC §2, §6):
 *
 *   resolve → sidecar → names → trust → spawn → compare → start
 *
 * resolve turns a reference into a library and its folder; sidecar reads the folder once (the
 * sidecar, the load-set hash, the config entry, the libraries the loader would map); names claims
 * the tool and command names; trust settles approval (no plugin byte runs before it); spawn starts
 * the plugin host, whose own phases (dlopen, the handshake, describe, attach) are reported inside
 * this step; compare holds what it described against the sidecar; start runs the plugin's start.
 */
import { CxError } from "../errors.ts";
import { type AcceptManifest, type GrantStore, Plugin, type PluginEventHooks, type PluginSpec } from "../host/plugin.ts";
import type { PermissionAnswer, PermissionHandler } from "../host/gate.ts";
import type { KnownManifest, Manifest, SecretDeclaration } from "../protocol/manifest.ts";
import type { SecretAccess } from "../secrets/access.ts";
import { sidecarJson } from "../discovery/sidecar.ts";
import type { Resolved } from "../discovery/discover.ts";
import { addGrant, hasGrant, projectScope } from "../trust/grants.ts";
import { type ConfirmTrust, confirmTrusted } from "../trust/check.ts";
import { firstDifference } from "./compare.ts";
import { describedKey, writeDescribed } from "./described.ts";
import { hostCommand } from "./host-command.ts";
import { bytesToLoad, type Inspection, recordInspected, refusalOf, trustRequestOf } from "./inspect.ts";
import { claimNames } from "./names.ts";
import { callSandboxOf, sandboxOf } from "./sandbox.ts";
import { LEASE_IDLE_MS, leasesOf } from "./leases.ts";
import { narrowSelection } from "./selection.ts";
import type { ToolChoice } from "../discovery/config.ts";
import { ruleText } from "../host/tool-policy.ts";

export const LOAD_STEPS = ["resolve", "sidecar", "names", "trust", "spawn", "compare", "start"] as const;
export type LoadStep = (typeof LOAD_STEPS)[number];

/** How long each step took; `spawn` also lists the plugin host's phases, from its spawn. */
export interface LoadTimings {
  steps: { step: LoadStep; ms: number }[];
  phases: { name: string; ms: number }[];
}

/** What the pipeline needs from its session. */
export interface PipelineContext {
  locate(ref: string): Resolved;
  inspectAt(location: Resolved): Inspection;
  loaded(): readonly Manifest[];
  /** The settings of a config.json entry, verbatim. */
  settingsOf(entry: string): unknown;
  /** The "workerFolders" of a config.json entry (a module's Workers may start from these). */
  workerFoldersOf?(entry: string): string[] | undefined;
  /** The "idleMs" of a config.json entry: how long its leased hosts (and, under cxagent mcp, its host) wait for a call. */
  idleMsOf?(entry: string): number | undefined;
  /** The caps on what a call answers, from a config.json entry (issue 41). */
  outputsOf?(entry: string): PluginSpec["outputs"];
  confirmTrust: ConfirmTrust | undefined;
  stateDir: string;
  cwd: string;
  hooksFor(manifest: Manifest): PluginEventHooks;
  /** What a plugin's hosts may ask of the session's secrets, by its name and what its approved sidecar declares (issue 40). */
  secretsFor?(plugin: string, declared: readonly SecretDeclaration[]): SecretAccess;
  /** The session's narrowing of every plugin's tools (checked already). */
  sessionTools: ToolChoice | undefined;
  /** The runtime's settings, the same for every plugin of the session: its hosts' settings, settled once, whole. */
  runtime: Pick<PluginSpec, "gateMs" | "host" | "results"> & {
    permission: PermissionHandler | PermissionAnswer | undefined;
  };
}

export interface PipelineOptions {
  settings?: unknown;
  once?: boolean;
  /** The load's own narrowing of the plugin's tools (checked already). */
  tools?: ToolChoice;
}

export async function runLoadPipeline(ref: string, options: PipelineOptions, context: PipelineContext): Promise<{ plugin: Plugin; timings: LoadTimings }> {
  const steps: LoadTimings["steps"] = [];
  let mark = performance.now();
  const done = (step: LoadStep, at = performance.now()) => {
    steps.push({ step, ms: at - mark });
    mark = at;
  };

  const location = context.locate(ref);
  done("resolve");

  const inspection = context.inspectAt(location);
  const { manifest: sidecar, loadSet } = inspection;
  const refusal = refusalOf(inspection);
  if (inspection.shadowing && refusal) throw refusal;
  const { disabled } = inspection;
  if (disabled.project) {
    // The project's word holds even for a load with `once`: that option is the user's way past their own config.
    throw new CxError("E_DISABLED", `plugin '${sidecar.name}' is disabled by this project's configuration (${ruleText(disabled.project)} is false), so it was not loaded`, {
      hint: `a project's "enabled": false holds for every load in it; remove that entry from ${disabled.project.source} to load the plugin here`,
      details: { plugin: sidecar.name, ...disabled.project },
    });
  }
  if (disabled.user && !options.once) {
    throw new CxError("E_DISABLED", `plugin '${sidecar.name}' is disabled in config.json (enabled: false), so it was not loaded`, {
      hint: "load it for this session only (it still needs approval), or set enabled: true in config.json",
      next: { do: "load-once", ref },
      details: { plugin: sidecar.name, ...disabled.user },
    });
  }
  if (refusal) throw refusal;
  done("sidecar");

  claimNames(sidecar, context.loaded());
  done("names");

  const trusted = await confirmTrusted(trustRequestOf(inspection), { approveCommand: ref, confirm: context.confirmTrust });
  if (trusted === "now") recordInspected(inspection, context.stateDir);
  done("trust");

  const entry = inspection.settings?.entry;
  const narrowing = { session: context.sessionTools, load: options.tools };
  // A declared sandbox: the host starts through the launcher, or the load is refused (E_SANDBOX) here.
  // (A Cortex process plugin's host starts as it is, and each call's process through the launcher.)
  const sandboxSetting = { cwd: context.cwd, stateDir: context.stateDir, privateDir: context.runtime.host.snapshotDir };
  const sandbox = sandboxOf(inspection, hostCommand(), sandboxSetting);
  const perCall = sandbox && inspection.profile.sandboxesCalls ? callSandboxOf(sandbox, hostCommand()) : null;
  const spec: PluginSpec = {
    name: sidecar.name,
    profile: inspection.profile,
    hostCommand: (perCall ? null : sandbox?.command) ?? hostCommand(),
    ...(sandbox ? { sandbox: perCall?.sandbox ?? sandbox } : {}),
    library: location.library,
    libraryBytes: bytesToLoad(inspection),
    dependencies: inspection.dependencies.plan!.inSet.map((d) => ({ path: d.path, soname: d.soname, bytes: loadSet.kept.get(d.path)! })),
    settings: options.settings ?? (entry === undefined ? undefined : context.settingsOf(entry)) ?? {},
    cwd: context.cwd,
    grants: grantStore(context.stateDir, projectScope(context.cwd), loadSet.realFolder),
    accept: acceptFor(sidecar, location.sidecar),
    expected: expectedOf(sidecar),
    ...context.runtime,
    // The session's host settings, and this plugin's own: the folders its Workers may start from.
    host: { ...context.runtime.host, workerFolders: (inspection.profile.workers && entry !== undefined ? context.workerFoldersOf?.(entry) : undefined) ?? [], ...(perCall ? { callSandbox: perCall.argument } : {}) },
    // From the sidecar, which describe must match tool for tool before anything is served.
    policy: narrowSelection(sidecar.tools, inspection.selection, narrowing).policy,
    // Given only now, after trust: the hosts start from the approved bytes, and may ask for what the approved sidecar declares.
    secrets: context.secretsFor?.(sidecar.name, sidecar.secrets ?? []),
    outputs: entry === undefined ? undefined : context.outputsOf?.(entry),
    // A dynamic gate's per-call lease: checked against the effective sandbox, served by a host of its own.
    ...(perCall ? {} : { leases: leasesOf(inspection, hostCommand(), sandboxSetting, (entry === undefined ? undefined : context.idleMsOf?.(entry)) ?? LEASE_IDLE_MS) }),
  };
  // A plugin with no sidecar (a Cortex one) declares its tools only when it runs.
  if (!inspection.profile.sidecar) spec.accept = acceptCortex(inspection, spec, context, narrowing);
  const plugin = await Plugin.start(spec, context.hooksFor(sidecar));
  const t = plugin.timings;
  done("spawn", t.readyAt);
  done("compare", t.acceptedAt);
  done("start", t.startedAt);
  return { plugin, timings: { steps, phases: t.phases.map((p) => ({ name: p.name, ms: p.at - t.spawnAt })) } };
}

/**
 * A Cortex plugin declares its tools only when it runs (no sidecar), so its tool names are claimed
 * and the tool selection decided when it first describes them. It is served under the name it
 * was approved as: its manifest.toml's is its identity (approval, config, the CLI). A plugin_info
 * naming it otherwise is a warning on the plugin (Plugin.warnings), not a refusal: the Cortex
 * SDK's own quick start ships that way, and Cortex loads it. After a restart it must describe
 * exactly what it did at first.
 */
function acceptCortex(inspection: Inspection, spec: PluginSpec, context: PipelineContext, narrowing: { session?: ToolChoice; load?: ToolChoice }): AcceptManifest {
  const approved = inspection.manifest;
  return (described, previous) => {
    const served: Manifest = { ...described, name: approved.name };
    if (previous === null) {
      const manifest = inspection.cortex?.manifest;
      if (manifest && described.name !== approved.name) {
        spec.warnings = [...(spec.warnings ?? []), infoNameWarning(described.name, approved.name, manifest)];
      }
      claimNames(served, context.loaded());
      spec.policy = narrowSelection(served.tools, inspection.selection, narrowing).policy;
      // What `cxagent mcp` lists next time without running it (described.ts), for these bytes and settings.
      if (JSON.stringify(served) !== JSON.stringify(inspection.described)) writeDescribed(context.stateDir, describedKey(inspection.loadSet.hash, spec.settings), served);
      return served;
    }
    if (JSON.stringify(served) === JSON.stringify(previous)) return served;
    const difference = firstDifference(previous, served, { expected: "the manifest it was loaded with", actual: "the restarted plugin host" });
    throw new CxError("E_MISMATCH", `plugin '${approved.name}' described a different manifest after a restart: ${difference ?? "the same declarations, in another order"}`, {
      hint: "the library changed while the session ran; load it again",
    });
  };
}

/** The warning for a plugin_info name that differs from the manifest.toml's (the Cortex SDK's quick start ships so). */
export function infoNameWarning(infoName: string, manifestName: string, manifest: string): string {
  return `plugin_info names it '${infoName}', but its manifest ${manifest} names it '${manifestName}': cxagent uses the manifest's name (approval, config, the CLI); make PluginInfo's name '${manifestName}' to silence this`;
}

/** The grants a plugin at `folder` receives and stores, in the project `scope`. */
function grantStore(stateDir: string, scope: string, folder: string): GrantStore {
  return {
    has: (rule) => hasGrant(stateDir, scope, rule, folder),
    add: (rule) => void addGrant(stateDir, scope, rule, folder),
  };
}

/** The sidecar's manifest with the JSON it was checked from; none for a Cortex plugin, which has no sidecar. */
function expectedOf(sidecar: Manifest): KnownManifest | undefined {
  const json = sidecarJson(sidecar);
  return json === undefined ? undefined : { json, manifest: sidecar };
}

/**
 * At the first start, what the plugin describes must say what its sidecar said (SPEC §4.2); after
 * a restart, exactly what it said when it was loaded (the library must not change under a session).
 */
function acceptFor(sidecar: Manifest, sidecarPath: string): AcceptManifest {
  return (described, previous) => {
    if (previous === null) {
      if (described === sidecar) return; // it described the sidecar's very JSON (KnownManifest)
      const difference = firstDifference(sidecar, described);
      if (difference) {
        throw new CxError("E_MISMATCH", `plugin '${sidecar.name}' was refused: ${difference}`, {
          hint: `make ${sidecarPath} and cxagent_plugin_describe agree`,
        });
      }
      return;
    }
    if (JSON.stringify(described) === JSON.stringify(previous)) return;
    const difference = firstDifference(previous, described, { expected: "the manifest it was loaded with", actual: "the restarted plugin host" });
    throw new CxError("E_MISMATCH", `plugin '${sidecar.name}' described a different manifest after a restart: ${difference ?? "the same declarations, in another order"}`, {
      hint: "the library changed while the session ran; load it again",
    });
  };
}
