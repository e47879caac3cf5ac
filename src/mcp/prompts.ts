/**
 * Plugin commands as MCP prompts (issue 42 point 4): `prompts/list` lists every command of the
 * served plugins (its arguments are the prompt's), and `prompts/get` runs the command with the
 * arguments' text, in the order the command declares them, and returns its message as the
 * prompt's one user message. A command that refuses is JSON-RPC -32602 with its message.
 */
import type { Command } from "../index.ts";
import type { Served } from "./lazy.ts";

export interface ListedPrompt {
  name: string;
  title: string;
  description: string;
  arguments: { name: string; description?: string; required: false }[];
  _meta: { "cxagent/plugin": string };
}

export function listedPrompts(plugins: readonly Served[]): ListedPrompt[] {
  return plugins.flatMap((p) =>
    p.manifest.commands.map((c) => ({
      name: c.name,
      title: `${p.name}: /${c.name}`,
      description: c.summary?.trim() ? c.summary : `/${c.name} (a command of plugin ${p.name} ${p.manifest.version})`,
      arguments: (c.arguments ?? []).map((a) => ({ name: a.name, ...(a.summary ? { description: a.summary } : {}), required: false as const })),
      _meta: { "cxagent/plugin": p.name },
    })),
  );
}

const invalid = (message: string) => Object.assign(new Error(message), { code: -32602 });

/** The command's text from a prompt's arguments: the declared ones in order, else every value given. */
export function commandText(command: Command, args: Record<string, string> | undefined): string {
  const given = args ?? {};
  const declared = command.arguments?.map((a) => a.name) ?? [];
  const unknown = declared.length ? Object.keys(given).filter((k) => !declared.includes(k)) : [];
  if (unknown.length) throw invalid(`prompt '${command.name}' takes the arguments ${declared.join(", ")}, not ${unknown.join(", ")}`);
  return (declared.length ? declared.map((n) => given[n]) : Object.values(given)).filter((v) => v !== undefined && v !== "").join(" ");
}

export async function getPrompt(plugins: readonly Served[], name: string, args: Record<string, string> | undefined, signal: AbortSignal) {
  const plugin = plugins.find((p) => p.manifest.commands.some((c) => c.name === name));
  if (!plugin) {
    const known = listedPrompts(plugins).map((p) => p.name);
    throw invalid(`Unknown prompt '${name}'; the prompts served are: ${known.join(", ") || "none"}`);
  }
  const command = plugin.manifest.commands.find((c) => c.name === name)!;
  const result = await plugin.command(name, commandText(command, args), { signal });
  if (result.status === "refused") throw invalid(result.message ?? `/${name} refused, and said nothing`);
  return {
    description: `/${name} of plugin ${plugin.name}`,
    messages: [{ role: "user" as const, content: { type: "text" as const, text: result.message ?? "" } }],
  };
}
