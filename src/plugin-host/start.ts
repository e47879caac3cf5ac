/**
 * What the common start of a plugin host (main.ts) hands to its kind's own startup (native.ts,
 * cortex.ts, module.ts): types only, so that no kind imports main.ts back.
 */
import type { HostArguments } from "../protocol/host-args.ts";
import type { Libc } from "./libc.ts";
import type { Shim } from "./shim.ts";

/** Which step refused a load, on the startup line (SPEC §5.1). */
export type Refusal = "load" | "exports" | "handshake" | "manifest";

/** What a kind's startup is handed: the shim is initialised, nothing of the plugin has run yet. */
export interface HostStart {
  libc: Libc;
  shim: Shim;
  settings: HostArguments;
  /** Writes `{ready: false}` and exits. */
  refuse(reason: Refusal, error: string): never;
  /** Writes a phase marker, so a crash in the step that follows can be named. */
  phase(name: string): void;
  /** The protocol's own descriptors: replies out (the shim writes it), requests in (the shim
   * reads it for a native plugin; module.ts reads it itself). */
  protocolFd: number;
  requestFd: number;
}
