/** A call's arguments, checked once, at the door (Plugin.invoke, Plugin.gate), before the gate or the plugin sees them. */
import { CxError } from "../errors.ts";
import { ARGUMENTS_DEPTH_LIMIT, ArgumentsValidator } from "../json-schema/check.ts";
import { tooDeep } from "../protocol/contract.ts";
import { describeValue, preview } from "../protocol/issues.ts";
import type { Tool } from "../protocol/manifest.ts";

/** One plugin's arguments checker: a validator per tool, compiled at its first call. */
export class ArgumentsCheck {
  private readonly validators = new Map<string, ArgumentsValidator>();

  /** `onLog` hears which values were coerced to the type the schema asks for. */
  constructor(private readonly onLog: ((level: number, text: string) => void) | undefined) {}

/**
   * A call's arguments as the plugin will see them: an object, nested no deeper than any tool
   * needs, that satisfies the tool's inputSchema — checked here, for every caller, before the gate
   * or the plugin sees them. Numbers and booleans a model sent as strings (or 0/1) are coerced
   * where the schema wants them (json-schema/check.ts). A violation is E_INVALID_INPUT naming the
   * path and the rule.
   */
  check(tool: Tool, args: unknown): Record<string, unknown> {
    const object = requireObject(args, `arguments for ${tool.name}`);
    const deep = tooDeep(object, ARGUMENTS_DEPTH_LIMIT, "(the arguments)");
    if (deep !== null) {
      throw new CxError("E_INVALID_INPUT", `arguments for ${tool.name} are nested more than ${ARGUMENTS_DEPTH_LIMIT} levels deep (at ${preview(deep, 80)}), deeper than the plugin host reads`, {
        details: { tool: tool.name, path: deep },
      });
    }
    let validator = this.validators.get(tool.name);
    if (!validator) this.validators.set(tool.name, (validator = new ArgumentsValidator(tool.inputSchema)));
    const checked = validator.check(object);
    if (!checked.ok) {
      const n = checked.problems.length;
      throw new CxError("E_INVALID_INPUT", `arguments for ${tool.name} do not match its inputSchema: ${checked.problems.map((p) => p.message).join("; ")}`, {
        hint: `the tool's inputSchema says which arguments it takes (${n} problem${n === 1 ? "" : "s"} here)`,
        details: { tool: tool.name, problems: checked.problems },
      });
    }
    if (checked.coerced.length) this.onLog?.(1, `${tool.name}: took ${checked.coerced.join(", ")} as the type its inputSchema asks for`);
    return checked.value;
  }
}

export function requireObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new CxError("E_INVALID_INPUT", `${what} must be a JSON object, not ${describeValue(value)}`, {
      hint: "pass an object such as {\"a\": 2, \"b\": 3}",
    });
  }
  return value as Record<string, unknown>;
}
