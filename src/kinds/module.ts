/**
 * A TypeScript or JavaScript module (`<stem>.ts` beside `<stem>.plugin.json`), run by cxagent's
 * own Bun: its host imports it from its folder's approved files, sent as one archive
 * (protocol/module-archive.ts) and written into a private snapshot folder.
 */
import { encodeArchive } from "../protocol/module-archive.ts";
import { HOST_DEFAULTS } from "../protocol/host-args.ts";
import { FUNCTION_OF } from "../protocol/wire.ts";
import type { KindProfile } from "./profile.ts";

export const MODULE: KindProfile = {
  kind: "module",
  exports: FUNCTION_OF,
  refusalHint(reason) {
    switch (reason) {
      case "manifest":
        return "fix what describe() returns (or the sidecar <name>.plugin.json, which is the manifest without describe); the two must agree";
      case "exports":
        return 'default-export definePlugin({ start, invoke, stop, ... }) from "cxagent" (see the README, "Plugins in TypeScript")';
      default:
        return "the module could not be imported as it was approved; what it wrote may say more";
    }
  },
  badReplyHint: "the plugin must return a JSON result envelope (see ffi/cxagent_plugin.h)",
  command: { export: "command()", hint: "see CommandResultInput in cxagent's plugin API" },
  described: { by: "the manifest its plugin host described", checkedByHost: true },
  // Its calls wait on its event loop, not on a pool of threads: as many may be out as the
  // correlator sends ahead at most (host/calls.ts).
  poolCap: HOST_DEFAULTS.pipelineCap,
  // Its host runs the plugin's own JavaScript, which may free much: the allocator keeps its default.
  runtimeEnv: {},
  // It imports from the bytes read at inspection, so every file of its folder is kept.
  keepsAllFiles: true,
  bytesToLoad: (files) => files.libraryPath === null ? undefined : encodeArchive({ folder: files.realFolder, entry: files.libraryPath, files: files.kept, links: files.links }),
  // A module maps no library: what it imports is held to its folder by its plugin host.
  plansLibraries: false,
  preparedHost: false,
  snapshot: true,
  workers: true,
  sidecar: true,
  handshake: false,
  checkable: true,
  words: {
    source: (path) => `module: ${path} (TypeScript/JavaScript, run by cxagent's Bun)`,
    listNote: null,
    steps: {},
    phases: {
      snapshot: "preparing the module's approved files",
      import: "importing the module (its top-level code)",
      describe: "describe()",
    },
  },
};
