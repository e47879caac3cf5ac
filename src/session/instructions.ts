/**
 * The instructions plugins add for the model (SPEC §6.4): each plugin's text under a heading that
 * names its tools, in load order. Only the tools the model sees are named; a plugin whose tools
 * are all hidden adds nothing (its text would be about tools the model cannot call), while one
 * that declares no tools at all adds its text as it is.
 */
import type { Manifest, Tool } from "../protocol/manifest.ts";

export interface InstructionsSource {
  manifest: Manifest;
  /** The tools the model sees (the manifest's, less the hidden ones). */
  tools: readonly Tool[];
}

export function composeInstructions(sources: readonly InstructionsSource[]): string {
  return sources
    .filter(({ manifest, tools }) => manifest.instructions && (tools.length > 0 || manifest.tools.length === 0))
    .map(({ manifest: m, tools }) => `## ${tools.length ? tools.map((t) => t.name).join(", ") : `${m.name} (no tools)`}\n\n${m.instructions!.trim()}\n`)
    .join("\n");
}
