/**
 * A command's meta, as its own file declares it: its name, the description its --help shows, and
 * the one-line summary the top-level help lists (citty's CommandMeta has no field for it).
 */
import type { CommandMeta } from "citty";

export interface CommandMetaWithSummary extends CommandMeta {
  summary: string;
}

export function commandMeta(meta: CommandMetaWithSummary): CommandMeta {
  return meta;
}

/** The summary a command's meta gives, else its description. */
export function summaryOf(meta: CommandMeta | undefined): string | undefined {
  return (meta as Partial<CommandMetaWithSummary> | undefined)?.summary ?? meta?.description;
}
