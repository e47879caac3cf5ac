/**
 * A tool's result checked against the outputSchema its manifest declares (issue 42 point 4): a
 * successful result whose `output` does not match is E_BAD_REPLY naming the path, as any other
 * reply that breaks the contract. A failed result (success: false) is not checked.
 */
import { CxError } from "../errors.ts";
import { OutputValidator } from "../json-schema/output.ts";
import type { Tool } from "../protocol/manifest.ts";
import type { JobResult } from "../protocol/result.ts";

export class OutputCheck {
  private readonly validators = new Map<string, OutputValidator>();

  check(plugin: string, tool: Tool, result: JobResult): JobResult {
    if (!tool.outputSchema || !result.success) return result;
    let validator = this.validators.get(tool.name);
    if (!validator) this.validators.set(tool.name, (validator = new OutputValidator(tool.outputSchema)));
    const problems = validator.problems(result.output);
    if (problems.length === 0) return result;
    throw new CxError("E_BAD_REPLY", `plugin '${plugin}': the output of ${tool.name} does not match its outputSchema: ${problems.join("; ")}`, {
      hint: "the plugin's result breaks the outputSchema its manifest declares; report it to the plugin's author",
      details: { plugin: plugin, tool: tool.name, problems },
    });
  }
}
