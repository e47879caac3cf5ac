/**
 * `cxagent check`: every check of one plugin, in order. The checks that read only files run
 * first; then, once trust is settled, the ones that run the plugin, each in plugin hosts of their
 * own in check mode (plugin-host --check), in a scratch working folder; last, the ones that judge
 * what every host saw. A check applies to some kinds of plugin (CHECKS[].kinds): every kind whose
 * profile says `checkable` is run (a Cortex native plugin's tools are those its first host
 * described; a Cortex process plugin's, its manifest.toml's); another kind gets its live checks
 * skipped.
 */
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { CxError, isCxError } from "../errors.ts";
import { Connection } from "../host/connection.ts";
import { GATE_MS } from "../host/gate.ts";
import { endProcesses } from "../reaper/escalate.ts";
import { identify } from "../reaper/proc.ts";
import { pluginHostEnv } from "../session/host-env.ts";
import { hostCommand } from "../session/host-command.ts";
import { bytesToLoad, type Inspection, recordInspected, refusalOf, trustRequestOf } from "../session/inspect.ts";
import type { Session } from "../session/session.ts";
import { type ConfirmTrust, confirmTrusted } from "../trust/check.ts";
import { readSymbols } from "../elf/symbols.ts";
import { libraryBytes } from "../trust/hash.ts";
import { checkBadArguments, checkConcurrency, checkContent, checkResults } from "./checks/calls.ts";
import { checkCommands, checkHostTable, checkPoll } from "./checks/extras.ts";
import { checkFree, checkOwnership, checkRegisters, checkSpawns } from "./checks/final.ts";
import { checkGateAnswers, checkGateSpeed } from "./checks/gate.ts";
import { checkBadSettings, checkDescribe, checkHandshake, checkStart, checkStop } from "./checks/lifecycle.ts";
import { checkDescriptions, checkExports, checkLibrary, checkNames, checkSchemas, checkSidecar } from "./checks/static.ts";
import { CheckContext } from "./context.ts";
import { checkCortexDescriptors, checkCortexLoad } from "./checks/cortex.ts";
import { checkBufferCap, checkFreedOnce, checkLentBuffers } from "./checks/buffers.ts";
import { newObservations, type SpawnCheckHost } from "./host.ts";
import { type CheckOutcome, type CheckReport, countOutcomes, type PluginKind, type Verdict } from "./report.ts";
import { profileOf } from "../kinds/index.ts";
import { DEFAULT_KIND, PLUGIN_KINDS } from "../protocol/host-args.ts";
import { ensurePrivateFolder } from "../host/private-folder.ts";
import { sandboxOf } from "../session/sandbox.ts";
import { checkSandbox } from "./checks/sandbox.ts";

export interface Check {
  id: string;
  title: string;
  /** The kinds of plugin it applies to. */
  kinds: readonly PluginKind[];
  /** It needs the plugin's code to have run (so trust settled first). */
  live: boolean;
  run(ctx: CheckContext): Verdict | Promise<Verdict>;
}

const ALL: readonly PluginKind[] = ["native", "cortex", "module", "cortex-process"];
/** The kinds whose manifest is known before they run (a Cortex process plugin's is its manifest.toml). */
const SIDECARS: readonly PluginKind[] = ["native", "module", "cortex-process"];
const NATIVE: readonly PluginKind[] = ["native"];
const LIBRARIES: readonly PluginKind[] = ["native", "cortex"];
const CORTEX: readonly PluginKind[] = ["cortex"];

/** Every check, in the order they run and are reported. */
export const CHECKS: readonly Check[] = [
  { id: "library", title: "the library can be loaded here", kinds: LIBRARIES, live: false, run: checkLibrary },
  { id: "exports", title: "every mandatory export is exported", kinds: NATIVE, live: false, run: checkExports },
  { id: "sidecar", title: "the sidecar is a valid manifest", kinds: SIDECARS, live: false, run: checkSidecar },
  { id: "schemas", title: "each inputSchema is a valid JSON Schema", kinds: SIDECARS, live: false, run: checkSchemas },
  { id: "descriptions", title: "each tool has a description", kinds: SIDECARS, live: false, run: checkDescriptions },
  { id: "names", title: "tool names are the plugin's own", kinds: SIDECARS, live: false, run: checkNames },
  // A Cortex plugin's handshake is cortex_plugin_init with its table, plugin_info and descriptors;
  // its describe, what those declare (each schema, description and name): checks/cortex.ts.
  { id: "handshake", title: "the handshake is in range and equals the manifest", kinds: LIBRARIES, live: true, run: (ctx) => (ctx.inspection?.cortex ? checkCortexLoad(ctx) : checkHandshake(ctx)) },
  { id: "describe", title: "describe returns the sidecar's manifest", kinds: [...SIDECARS, ...CORTEX], live: true, run: (ctx) => (ctx.inspection?.cortex ? checkCortexDescriptors(ctx) : checkDescribe(ctx)) },
  { id: "start", title: "start works with empty settings", kinds: ALL, live: true, run: checkStart },
  { id: "results", title: "calls return a valid result envelope", kinds: ALL, live: true, run: checkResults },
  { id: "content", title: "results carry output.content", kinds: ALL, live: true, run: checkContent },
  { id: "bad-arguments", title: "missing and mistyped arguments fail cleanly", kinds: ALL, live: true, run: checkBadArguments },
  { id: "gate-speed", title: "gate answers well within its deadline", kinds: SIDECARS, live: true, run: checkGateSpeed },
  { id: "gate-answers", title: "gate answers NULL or a display", kinds: SIDECARS, live: true, run: checkGateAnswers },
  { id: "concurrency", title: "calls at once answer as calls alone", kinds: ALL, live: true, run: checkConcurrency },
  { id: "commands", title: "commands answer a message and status", kinds: SIDECARS, live: true, run: checkCommands },
  { id: "bad-settings", title: "start falls back from bad settings", kinds: ALL, live: true, run: checkBadSettings },
  { id: "stop", title: "stop is safe after start, without it, after a failed one", kinds: ALL, live: true, run: checkStop },
  { id: "poll", title: "poll submits well-formed work, as a client", kinds: SIDECARS, live: true, run: checkPoll },
  { id: "host-table", title: "host-table reports stay inside calls", kinds: NATIVE, live: true, run: checkHostTable },
  { id: "ownership", title: "every returned string is fresh heap memory", kinds: LIBRARIES, live: true, run: checkOwnership },
  { id: "free", title: "cxagent_plugin_free releases each string", kinds: LIBRARIES, live: true, run: checkFree },
  // A Cortex plugin's buffers: {ptr, len, cap}, freed by its own buffer_free (checks/buffers.ts).
  { id: "buffer-cap", title: "each returned buffer's len is within its cap", kinds: CORTEX, live: true, run: checkBufferCap },
  { id: "freed-once", title: "no buffer is returned again once freed", kinds: CORTEX, live: true, run: checkFreedOnce },
  { id: "lent-buffers", title: "tool_execute never frees a buffer it is lent", kinds: CORTEX, live: true, run: checkLentBuffers },
  { id: "spawns", title: "started processes are declared", kinds: ALL, live: true, run: checkSpawns },
  { id: "registers", title: "started processes are registered", kinds: ALL, live: true, run: checkRegisters },
  { id: "sandbox", title: "the calls stay within the declared sandbox", kinds: ALL, live: true, run: checkSandbox },
];

/** The command and sandbox of a check host: through the launcher when the plugin has a sandbox (E_SANDBOX, as at load, when a layer is missing). */
function sandboxedSpawn(sandboxed: ReturnType<typeof sandboxOf>) {
  return sandboxed ? { hostCommand: sandboxed.command, sandbox: sandboxed } : { hostCommand: hostCommand() };
}

/** The kinds this build can run in a check-mode plugin host. */
const RUNS: readonly PluginKind[] = PLUGIN_KINDS.filter((kind) => profileOf(kind).checkable);

export interface CheckOptions {
  /**
   * Asks a person to approve the plugin when its exact files are not approved in the session's
   * state folder (default: the session's own confirmTrust). Without one, an unapproved plugin is
   * refused (E_NOT_APPROVED) before any of its code runs.
   */
  confirmTrust?: ConfirmTrust;
  /** Run only these checks (ids of CHECKS). */
  only?: readonly string[];
  /** Each invoke and command may take this long (default 10 s). */
  callTimeoutMs?: number;
  /** More environment for the plugin hosts, as SessionOptions.env. */
  env?: Record<string, string>;
  /**
   * Where the plugin hosts run (their working folder and the project folder start is given): this
   * folder itself (`cxagent check --cwd DIR`: the tools see the project as a user's call would, and
   * may change it), or a copy of `fixture` in a scratch folder. Default: an empty scratch folder.
   */
  project?: string;
  fixture?: string;
}

/** The kind of plugin a location holds (discovery decides it, before any code runs; native until it says otherwise). */
function kindOf(location: object): PluginKind {
  const kind = (location as { kind?: unknown }).kind;
  return (PLUGIN_KINDS as readonly unknown[]).includes(kind) ? (kind as PluginKind) : DEFAULT_KIND;
}

/**
 * Checks one plugin. Trust is asked of `confirmTrust` (or must be settled in the session's state
 * folder already) before any of its code runs; `cxagent check` gives it a throwaway state folder.
 */
export async function checkPlugin(session: Session, ref: string, options: CheckOptions = {}): Promise<CheckReport> {
  const selected = selectChecks(options.only);
  const location = session.locate(ref);
  let inspection: Inspection | null = null;
  let sidecarError: CxError | null = null;
  try {
    inspection = session.inspectAt(location);
  } catch (error) {
    if (!isCxError(error, "E_MANIFEST")) throw error;
    sidecarError = error;
  }
  if (inspection?.shadowing) throw refusalOf(inspection)!;
  const kind = kindOf(location);
  // The hosts' working folder, where a plugin may write and read back: private all the way up, as a snapshot is.
  const made = realpathSync(mkdtempSync(join(ensurePrivateFolder(session.snapshotDir, "cxagent check runs its plugin hosts"), "cxagent-check-")));
  try {
    if (options.fixture !== undefined) copyFixture(options.fixture, made);
  } catch (error) {
    rmSync(made, { recursive: true, force: true });
    throw error;
  }
  const scratch = options.project !== undefined ? realpathSync(options.project) : made;
  const seen = newObservations();
  const env = pluginHostEnv(process.env, options.env);
  // A declared (or imposed) sandbox holds for check's hosts as for a session's: the calls are made under it (issue 39 point 5).
  // (A plugin whose sandbox confines each call's process, not its host, runs its check hosts as they are.)
  const sandboxed = () => (inspection && !inspection.profile.sandboxesCalls ? sandboxOf(inspection, hostCommand(), { cwd: scratch, stateDir: session.folders.stateDir, privateDir: session.snapshotDir }) : null);
  const spawn: SpawnCheckHost = (hooks) => Connection.spawn({
    ...sandboxedSpawn(sandboxed()),
    kind,
    library: location.library,
    libraryBytes: inspection ? bytesToLoad(inspection) : undefined,
    dependencies: inspection?.dependencies.plan?.inSet.map((d) => ({ path: d.path, soname: d.soname, bytes: inspection!.loadSet.kept.get(d.path)! })),
    label: inspection?.name ?? location.library,
    cwd: scratch,
    env,
    snapshotDir: session.snapshotDir,
    pollMs: POLL_MS,
    check: true,
    ...hooks,
  });
  const ctx = new CheckContext({
    ref,
    kind,
    location,
    inspection,
    sidecarError,
    symbols: symbolsOf(location.library, inspection),
    seen,
    scratch,
    timeouts: { callMs: options.callTimeoutMs ?? 10_000, startMs: 30_000, stopMs: 10_000, gateMs: GATE_MS },
    pollMs: POLL_MS,
    configuredSettings: inspection ? session.config.plugins.get(inspection.name)?.settings : undefined,
    spawn,
  });
  const outcomes: CheckOutcome[] = [];
  let ended: number[] = [];
  try {
    const applies = (c: Check) => c.kinds.includes(kind);
    for (const check of selected.filter((c) => !c.live)) {
      outcomes.push(applies(check) ? { id: check.id, title: check.title, ...(await check.run(ctx)) } : notFor(check, kind));
    }
    const live = selected.filter((c) => c.live);
    if (live.length) {
      ctx.runnable = await whyNotRunnable(ctx, ref, session, options);
      // A plugin without a sidecar declares its tools only when it runs: its first host says them.
      if (ctx.runnable === null && !profileOf(kind).sidecar) await ctx.first();
      for (const check of live) {
        outcomes.push(applies(check) ? { id: check.id, title: check.title, ...(await check.run(ctx)) } : notFor(check, kind));
      }
    }
  } finally {
    await ctx.closeAll();
    ended = await endLeftovers(ctx);
    rmSync(made, { recursive: true, force: true }); // never the project folder itself
  }
  const counts = countOutcomes(outcomes);
  return {
    plugin: inspection?.name ?? location.library,
    version: inspection?.manifest.version ?? null,
    library: location.library,
    kind,
    ok: counts.fail === 0,
    ranIn: options.project !== undefined ? { folder: scratch, what: "project" } : options.fixture !== undefined ? { folder: options.fixture, what: "fixture" } : { folder: null, what: "empty" },
    counts,
    checks: outcomes,
    ended,
  };
}

const POLL_MS = 20;

/** Copies a fixture folder's contents into the scratch folder (symbolic links kept as links). */
function copyFixture(fixture: string, into: string): void {
  let isFolder = false;
  try {
    isFolder = statSync(fixture).isDirectory();
  } catch {
    // reported below
  }
  if (!isFolder) throw new CxError("E_INVALID_INPUT", `the fixture ${fixture} is not a folder`, { hint: "give --fixture a folder whose contents the tools should find in their working folder" });
  cpSync(fixture, into, { recursive: true, verbatimSymlinks: true });
}

function selectChecks(only: readonly string[] | undefined): readonly Check[] {
  if (!only) return CHECKS;
  const unknown = only.filter((id) => !CHECKS.some((c) => c.id === id));
  if (unknown.length) {
    throw new CxError("E_INVALID_INPUT", `cxagent check has no check named ${unknown.map((u) => `'${u}'`).join(", ")}`, {
      hint: `the checks: ${CHECKS.map((c) => c.id).join(", ")}`,
    });
  }
  return CHECKS.filter((c) => only.includes(c.id));
}

const notFor = (check: Check, kind: PluginKind): CheckOutcome => ({ id: check.id, title: check.title, status: "skip", seen: `does not apply to a ${kind} plugin`, fix: null });

function symbolsOf(library: string, inspection: Inspection | null) {
  try {
    return readSymbols((inspection && libraryBytes(inspection.loadSet)) ?? readFileSync(library));
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Settles trust before any plugin code runs; null when it may run, else why not (in words). */
async function whyNotRunnable(ctx: CheckContext, ref: string, session: Session, options: CheckOptions): Promise<string | null> {
  if (!ctx.inspection) return "the sidecar could not be read, so no plugin code was run (see sidecar)";
  if (ctx.inspection.dependencies.problem) return "the library cannot be loaded as it is, so no plugin code was run (see library)";
  if (!RUNS.includes(ctx.kind)) return `this build of cxagent check cannot run a ${ctx.kind} plugin yet`;
  const trusted = await confirmTrusted(trustRequestOf(ctx.inspection), { approveCommand: ref, confirm: options.confirmTrust ?? session.confirmTrust });
  if (trusted === "now") recordInspected(ctx.inspection, session.folders.stateDir);
  return null;
}

/** Ends what the plugin started and nobody else will end (proven descendants, by pid and start time); their pids. */
async function endLeftovers(ctx: CheckContext): Promise<number[]> {
  const left = [...ctx.seen.processes.values()].filter((p) => identify(p.pid, p.startTime) === "same");
  if (left.length === 0) return [];
  await endProcesses(left.map((p) => ({ pid: p.pid, startTime: p.startTime })), { graceMs: 500 });
  return left.map((p) => p.pid);
}
