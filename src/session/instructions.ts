/**
 * The instructions plugins add for the model (SPEC §6.4): each plugin's text under a heading that
 * names its tools, in load order.
 */
import type { Manifest } from "../protocol/manifest.ts";

export function composeInstructions(manifests: readonly Manifest[]): string {
  return manifests
    .filter((m) => m.instructions)
    .map((m) => `## ${m.tools.length ? m.tools.map((t) => t.name).join(", ") : `${m.name} (no tools)`}\n\n${m.instructions!.trim()}\n`)
    .join("\n");
}
