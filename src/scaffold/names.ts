/**
 * The names a new plugin's files and code use, all derived from its plugin name (SPEC §4.1).
 */
import { isPluginName, PLUGIN_NAME_RULE } from "../protocol/manifest.ts";
import { CxError } from "../errors.ts";

export interface PluginNames {
  /** The plugin name as given: the manifest's name and the stem of its library and sidecar. */
  name: string;
  /** A lowercase identifier, valid in C and Rust: the tool's prefix. */
  ident: string;
  /** The cargo package name; cargo builds lib<crate>.so from it. */
  crate: string;
  /** The one tool a new plugin has. */
  tool: string;
}

const TOOL_VERB = "_greet";

// Names cargo refuses for a package: Rust's keywords, and names that clash with the standard
// library, cargo's own output folders or Windows device names.
const NOT_A_CRATE = new Set(
  (
    "as async await break const continue crate dyn else enum extern false fn for gen if impl in let loop match mod move mut " +
    "pub ref return self static struct super trait true try type unsafe use where while abstract become box do final macro " +
    "override priv typeof unsized virtual yield alloc core std proc_macro test build deps examples incremental " +
    "con prn aux nul com1 com2 com3 com4 com5 com6 com7 com8 com9 lpt1 lpt2 lpt3 lpt4 lpt5 lpt6 lpt7 lpt8 lpt9"
  ).split(" "),
);

/** Derives every name from a plugin name; refuses one that breaks SPEC §4.1's rule. */
export function pluginNames(name: string): PluginNames {
  if (!isPluginName(name)) {
    const suggestion = suggestName(name);
    throw new CxError("E_INVALID_INPUT", `${JSON.stringify(name)} is not a plugin name: use ${PLUGIN_NAME_RULE}`, {
      hint: suggestion ? `try ${JSON.stringify(suggestion)}` : "choose a short name such as \"my-tools\"",
    });
  }
  const lower = name.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  const ident = /^[0-9]/.test(lower) ? `plugin_${lower}` : lower;
  const crate = NOT_A_CRATE.has(ident) ? `${ident}_plugin` : ident;
  const tool = `${ident.slice(0, 64 - TOOL_VERB.length)}${TOOL_VERB}`;
  return { name, ident, crate, tool };
}

/** A valid plugin name close to what was typed, or null when nothing of it is usable. */
export function suggestName(input: string): string | null {
  const cleaned = input
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 64)
    .replace(/[-.]+$/, "");
  return cleaned && isPluginName(cleaned) ? cleaned : null;
}
