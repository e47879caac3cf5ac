/** A library of the cxagent ABI (ffi/cxagent_plugin.h), beside its sidecar `<name>.plugin.json`. */
import { HOST_DEFAULTS } from "../protocol/host-args.ts";
import { EXPORT_OF } from "../protocol/wire.ts";
import { type KindProfile, libraryBytesOf } from "./profile.ts";

/** Memory Bun's allocator frees is kept for reuse in a host that runs no plugin JavaScript (host/runtime-tuning.ts). */
export const NATIVE_RUNTIME_ENV = { MIMALLOC_PURGE_DELAY: "-1" } as const;

export const NATIVE: KindProfile = {
  kind: "native",
  exports: EXPORT_OF,
  refusalHint(reason) {
    switch (reason) {
      case "handshake":
        return "rebuild the plugin against this cxagent's contract (cxagent_plugin.h, which cxagent new writes into a C project; CXAGENT_PLUGIN_CONTRACT)";
      case "manifest":
        return "fix what cxagent_plugin_describe returns; it must match the sidecar <name>.plugin.json";
      case "exports":
        return "export every mandatory function: in C with CXAGENT_PLUGIN_EXPORT from cxagent_plugin.h (a C project that cxagent new makes has a copy), in Rust as #[unsafe(no_mangle)] pub extern \"C\" fn; cxagent check lists what is missing";
      default:
        return "check that the path names a shared library built for this machine";
    }
  },
  badReplyHint: "the plugin must return a JSON result envelope (see ffi/cxagent_plugin.h)",
  command: { export: "cxagent_plugin_command", hint: "see cxagent_plugin_command in ffi/cxagent_plugin.h" },
  described: { by: "the manifest from cxagent_plugin_describe", checkedByHost: false },
  poolCap: HOST_DEFAULTS.poolCap,
  runtimeEnv: NATIVE_RUNTIME_ENV,
  keepsAllFiles: false,
  bytesToLoad: libraryBytesOf,
  plansLibraries: true,
  preparedHost: true,
  snapshot: false,
  workers: false,
  sidecar: true,
  handshake: true,
  checkable: true,
  words: {
    source: (path) => `library: ${path}`,
    listNote: null,
    steps: {},
    phases: { dlopen: "loading the library (its constructors)" },
  },
};
