/**
 * A Cortex process plugin: a manifest.toml listing [[native.tools]], each a command run once per
 * call (protocol/cortex-process.ts). Its manifest is known before it runs (read from the
 * manifest.toml, as a sidecar is); its plugin host is cxagent's own Bun, which writes the approved
 * files into a private snapshot folder and runs each call's command from there, in a process
 * group of its own, recorded like a registered child (plugin-host/process.ts, process-run.ts).
 */
import { encodeArchive } from "../protocol/module-archive.ts";
import { HOST_DEFAULTS } from "../protocol/host-args.ts";
import { PROCESS_EXPORT_OF } from "../protocol/wire.ts";
import type { KindProfile } from "./profile.ts";

export const CORTEX_PROCESS: KindProfile = {
  kind: "cortex-process",
  exports: PROCESS_EXPORT_OF,
  refusalHint(reason) {
    switch (reason) {
      case "manifest":
        return "fix the manifest.toml: [[native.tools]] each with name, description, command (inside the plugin's folder unless [native] allow_host_paths = true)";
      default:
        return "the plugin host could not prepare the plugin's approved files; what it wrote may say more";
    }
  },
  badReplyHint: 'a Cortex process tool writes on stdout a JSON string, or {"output": string, "is_error": boolean}',
  command: { export: "command (no Cortex function)", hint: "a Cortex process plugin has no commands" },
  described: { by: "the manifest.toml its plugin host read", checkedByHost: true },
  // Each call is a process of its own: as many may be out as the correlator sends ahead.
  poolCap: HOST_DEFAULTS.pipelineCap,
  runtimeEnv: {},
  // Its commands run from the bytes read at inspection, so every file of its folder is kept.
  keepsAllFiles: true,
  bytesToLoad: (files) => files.libraryPath === null ? undefined : encodeArchive({ folder: files.realFolder, entry: files.libraryPath, files: files.kept, links: files.links }),
  plansLibraries: false,
  preparedHost: false,
  snapshot: true,
  workers: false,
  sidecar: true,
  handshake: false,
  sandboxesCalls: true,
  checkable: true,
  declaresTools: "manifest.toml",
  words: {
    source: (path) => `manifest: ${path} (a Cortex process plugin: each call runs its tool's command)`,
    listNote: "Cortex process plugin: each call runs its tool's command, one process per call",
    steps: { sidecar: "read the folder (manifest.toml, hash, config)" },
    phases: { snapshot: "preparing the plugin's approved files" },
  },
};
