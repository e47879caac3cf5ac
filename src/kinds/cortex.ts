/**
 * A Cortex native plugin (cortex_plugin_init, ABI 1): no sidecar; its name from its manifest.toml
 * or its library's file name, its tools declared only when it runs (discovery/cortex.ts).
 */
import { HOST_DEFAULTS } from "../protocol/host-args.ts";
import { CORTEX_EXPORT_OF } from "../protocol/wire.ts";
import { NATIVE, NATIVE_RUNTIME_ENV } from "./native.ts";
import { type KindProfile, libraryBytesOf } from "./profile.ts";

export const CORTEX: KindProfile = {
  kind: "cortex",
  exports: CORTEX_EXPORT_OF,
  refusalHint(reason) {
    switch (reason) {
      case "handshake":
        return "the library must be a Cortex native plugin of ABI 1 (cortex_plugin_init, as the Cortex SDK's export_plugin! makes it), with a complete table and valid plugin_info and tool descriptors";
      case "manifest":
        return "fix plugin_info or the tool descriptors: names must suit cxagent (a plugin name of letters, digits, . _ -; tool names of letters, digits, _ -), each tool once";
      case "exports":
        return "a Cortex plugin exports cortex_plugin_init";
      default:
        return "check that the path names a shared library built for this machine";
    }
  },
  badReplyHint: 'a Cortex tool_execute returns a ToolResult as JSON: {"output": string, "media": [attachment], "is_error": boolean}',
  // A Cortex plugin has no commands; a reply to one is its host's, and read as a native one's.
  command: NATIVE.command,
  described: { by: "the manifest its plugin host described", checkedByHost: true },
  poolCap: HOST_DEFAULTS.poolCap,
  runtimeEnv: NATIVE_RUNTIME_ENV,
  keepsAllFiles: false,
  bytesToLoad: libraryBytesOf,
  plansLibraries: true,
  preparedHost: true,
  snapshot: false,
  workers: false,
  sidecar: false,
  handshake: true,
  checkable: true,
  words: {
    source: (path) => `library: ${path}`,
    listNote: "Cortex native plugin: its tools are declared only when it runs (describe --live)",
    steps: {
      sidecar: "read the folder (manifest.toml, hash, config)",
      names: "claim the plugin's name",
      compare: "claim the tool names it declared",
      start: "start (nothing to call in a Cortex plugin)",
    },
    phases: { dlopen: "loading the library (its constructors)" },
  },
};
