/**
 * The plugin host's command line (SPEC §2): `cxagent __host <library> [options]`. The parent
 * passes the host's settings here, never through the environment, which is the plugin's.
 *
 *   --library-fd N          the approved bytes of <library>, as an open sealed file
 *   --dependency N:PATH     a sealed copy of a library from the plugin's folder it needs, in load order
 *   --parent-pid N          the process that spawned it; if that is gone already, the host exits
 *   --pool-cap N            at most this many calls in native code at once
 *   --poll-ms N             the poll interval
 *   --spin-us N             the request threads' spin window (0: never spin; see the shim)
 *   --kind K                what <library> is: native (ffi/cxagent_plugin.h, the default), cortex
 *                           (cortex_plugin_init), or module (a TypeScript or JavaScript module;
 *                           --library-fd then holds its folder's approved files, protocol/module-archive.ts)
 *   --session-id ID         the parent's session, which a Cortex plugin is told in each call
 *   --source S              who calls (cli, library, mcp), which a Cortex plugin is told in each call
 *   --snapshot DIR          module only: the empty private folder the parent made for the snapshot
 *   --worker-folder DIR     module only, repeatable: a folder outside the plugin's own from which
 *                           its Workers may start (the plugin's "workerFolders" in config.json)
 *   --call-sandbox JSON     cortex-process only: {"launcher": [...], "policy": {...}}, the sandbox
 *                           launcher's command and the policy each call's process starts under
 *                           (plugin-host/process-sandbox.ts); the host itself runs as it is
 *   --check                 check mode, for `cxagent check`: the shim watches every export and the
 *                           host table and says what it sees ("check" events, wire.ts)
 *
 * A prepared host (host/prepared.ts) is started as `cxagent __host --await --parent-pid N`, before
 * the parent knows its plugin; its first request line is then `{"argv": [...], "cwd": DIR}`, the
 * command line above, and fd 3 its sealed copy.
 *
 * Run from a checkout (not the compiled binary), either may begin with `--shim=PATH`: the built
 * shim, which the parent found newer than its source, for the host to load without looking.
 */
export const SHIM_OPTION = "--shim=";
export const PLUGIN_KINDS = ["native", "cortex", "module", "cortex-process"] as const;
export type PluginKind = (typeof PLUGIN_KINDS)[number];

export interface HostArguments {
  /** Module only: where the host writes the approved files so that Bun can resolve imports. */
  snapshot: string | null;
  library: string;
  kind: PluginKind;
  sessionId: string | null;
  /** Who calls (the parent's front end); left off: "library". */
  source?: InvocationSource;
  libraryFd: number | null;
  dependencies: { fd: number; path: string }[];
  parentPid: number | null;
  poolCap: number;
  pollMs: number;
  spinUs: number | null;
  /** Check mode (`cxagent check`); never set for an ordinary load. */
  check?: boolean;
  /** Module only: folders outside the plugin's own from which its Workers may start (config.json "workerFolders"). */
  workerFolders?: string[];
  /** Cortex process only: the launcher and policy each call's process starts under (JSON). */
  callSandbox?: string;
}

/** The settings' defaults, which the host reads too: one table (host-settings.ts). */
export { HOST_DEFAULTS } from "./host-settings.ts";
import { HOST_DEFAULTS, INVOCATION_SOURCES, type InvocationSource } from "./host-settings.ts";
/** The kind a plugin is when nobody said: `--kind` is left off for it. */
export const DEFAULT_KIND: PluginKind = "native";

export function hostArgv(a: HostArguments): string[] {
  return [
    a.library,
    ...(a.libraryFd === null ? [] : ["--library-fd", String(a.libraryFd)]),
    ...a.dependencies.flatMap((d) => ["--dependency", `${d.fd}:${d.path}`]),
    ...(a.parentPid === null ? [] : ["--parent-pid", String(a.parentPid)]),
    "--pool-cap", String(a.poolCap),
    "--poll-ms", String(a.pollMs),
    ...(a.spinUs === null ? [] : ["--spin-us", String(a.spinUs)]),
    ...(a.kind === DEFAULT_KIND ? [] : ["--kind", a.kind]),
    ...(a.sessionId === null ? [] : ["--session-id", a.sessionId]),
    ...(a.source === undefined || a.source === "library" ? [] : ["--source", a.source]),
    ...(a.check ? ["--check"] : []),
    ...(a.snapshot === null ? [] : ["--snapshot", a.snapshot]),
    ...(a.workerFolders ?? []).flatMap((folder) => ["--worker-folder", folder]),
    ...(a.callSandbox === undefined ? [] : ["--call-sandbox", a.callSandbox]),
  ];
}

/** Reads the host's command line; an option it does not know, or a bad number, is an error. */
export function readHostArgv(argv: readonly string[]): HostArguments | { error: string } {
  const [library, ...rest] = argv;
  if (!library || library.startsWith("--")) return { error: "no library given: usage is cxagent __host <library> [options]" };
  const out: HostArguments = { library, kind: DEFAULT_KIND, sessionId: null, snapshot: null, libraryFd: null, dependencies: [], parentPid: null, poolCap: HOST_DEFAULTS.poolCap, pollMs: HOST_DEFAULTS.pollMs, spinUs: null };
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i]!;
    if (flag === "--check") {
      out.check = true;
      i--; // the one option without a value
      continue;
    }
    const value = rest[i + 1];
    if (value === undefined) return { error: `${flag} needs a value` };
    const int = Number(value);
    const isCount = Number.isInteger(int) && int >= 0;
    switch (flag) {
      case "--library-fd":
        if (!isCount) return { error: `--library-fd takes a descriptor number, not '${value}'` };
        out.libraryFd = int;
        break;
      case "--dependency": {
        const colon = value.indexOf(":");
        const fd = Number(value.slice(0, colon));
        if (colon < 1 || !Number.isInteger(fd) || fd < 0) return { error: `--dependency takes N:PATH, not '${value}'` };
        out.dependencies.push({ fd, path: value.slice(colon + 1) });
        break;
      }
      case "--parent-pid":
      case "--pool-cap":
      case "--poll-ms":
      case "--spin-us":
        if (!isCount) return { error: `${flag} takes a whole number, not '${value}'` };
        if (flag === "--parent-pid") out.parentPid = int;
        else if (flag === "--pool-cap") out.poolCap = int;
        else if (flag === "--poll-ms") out.pollMs = int;
        else out.spinUs = int;
        break;
      case "--kind":
        if (!(PLUGIN_KINDS as readonly string[]).includes(value)) return { error: `--kind takes ${PLUGIN_KINDS.slice(0, -1).join(", ")} or ${PLUGIN_KINDS.at(-1)}, not '${value}'` };
        out.kind = value as PluginKind;
        break;
      case "--session-id":
        out.sessionId = value;
        break;
      case "--source":
        if (!(INVOCATION_SOURCES as readonly string[]).includes(value)) return { error: `--source takes ${INVOCATION_SOURCES.join(", ")}, not '${value}'` };
        out.source = value as InvocationSource;
        break;
      case "--snapshot":
        out.snapshot = value;
        break;
      case "--worker-folder":
        (out.workerFolders ??= []).push(value);
        break;
      case "--call-sandbox":
        out.callSandbox = value;
        break;
      default:
        return { error: `unknown option '${flag}'` };
    }
  }
  return out;
}
