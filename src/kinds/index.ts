/** Every kind of plugin cxagent loads, by its name on the wire (protocol/host-args.ts PLUGIN_KINDS). */
import { DEFAULT_KIND, type PluginKind } from "../protocol/host-args.ts";
import { CORTEX } from "./cortex.ts";
import { CORTEX_PROCESS } from "./cortex-process.ts";
import { MODULE } from "./module.ts";
import { NATIVE } from "./native.ts";
import type { KindProfile } from "./profile.ts";

export type { KeptFiles, KindProfile, KindWords } from "./profile.ts";

const PROFILES: Readonly<Record<PluginKind, KindProfile>> = { native: NATIVE, cortex: CORTEX, module: MODULE, "cortex-process": CORTEX_PROCESS };

/** The profile of a kind; a plugin whose kind nobody said is a native one. */
export function profileOf(kind: PluginKind | undefined): KindProfile {
  return PROFILES[kind ?? DEFAULT_KIND];
}
