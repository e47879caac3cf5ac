/**
 * Names are claimed session-wide (SPEC §6.4): a tool or command name held by a built-in or by a
 * plugin loaded earlier refuses the newcomer entirely. `load` refuses with the first collision;
 * `list` shows every one, against the plugins listed before it.
 */
import { CxError } from "../errors.ts";
import type { Manifest } from "../protocol/manifest.ts";

/** Tool names the agent itself provides; no plugin may claim them. */
export const BUILTIN_TOOLS = [
  "read_file", "glob", "grep", "write_file", "replace_in_file", "run_shell",
  "http_request", "web_fetch", "ask_user", "todowrite", "agent", "skill",
  "cxagent_read_result", // cxagent mcp's own (issue 41)
] as const;

export interface Collision {
  kind: "tool" | "command";
  name: string;
  /** The plugin holding it, or null for a built-in tool. */
  holder: string | null;
}

/** Every name of `manifest` already held by a built-in or by one of `holders`, in manifest order. */
export function collisionsOf(manifest: Manifest, holders: readonly Manifest[]): Collision[] {
  const collisions: Collision[] = [];
  for (const tool of manifest.tools) {
    if ((BUILTIN_TOOLS as readonly string[]).includes(tool.name)) {
      collisions.push({ kind: "tool", name: tool.name, holder: null });
      continue;
    }
    const holder = holders.find((h) => h.tools.some((t) => t.name === tool.name));
    if (holder) collisions.push({ kind: "tool", name: tool.name, holder: holder.name });
  }
  for (const command of manifest.commands) {
    const holder = holders.find((h) => h.commands.some((c) => c.name === command.name));
    if (holder) collisions.push({ kind: "command", name: command.name, holder: holder.name });
  }
  return collisions;
}

/** Refuses `manifest` when its name, or one of its tool or command names, is already held. */
export function claimNames(manifest: Manifest, loaded: readonly Manifest[]): void {
  if (loaded.some((m) => m.name === manifest.name)) {
    throw new CxError("E_COLLISION", `a plugin named '${manifest.name}' is already loaded in this session`);
  }
  const [first] = collisionsOf(manifest, loaded);
  if (!first) return;
  if (first.holder === null) {
    throw new CxError("E_COLLISION", `plugin '${manifest.name}' was refused: its tool '${first.name}' is a built-in tool's name`, {
      hint: "a plugin's tool names must be its own; ask its author to rename the tool",
    });
  }
  throw new CxError("E_COLLISION", `plugin '${manifest.name}' was refused: its ${first.kind} '${first.name}' is already held by plugin '${first.holder}'`, {
    hint: `unload '${first.holder}' first, or ask one of the authors to rename the ${first.kind}`,
  });
}
