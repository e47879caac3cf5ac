/**
 * The text of a permission rule (SPEC §7): what a standing grant names. The host builds it from
 * the plugin's and the tool's names, never from anything the plugin says.
 */
export function ruleFor(plugin: string, tool: string): string {
  return `plugin ${plugin} tool ${tool}`;
}
