/**
 * What a Cortex process plugin declares before it runs (protocol/cortex-process.ts): its manifest,
 * read from the manifest.toml bytes the load set's hash read, and what its tools run, for the
 * trust prompt and describe (commands outside its folder named).
 */
import { CxError } from "../errors.ts";
import { readProcessManifest, isOutside } from "../protocol/cortex-process.ts";
import { checkManifest, describeProblems, type Manifest } from "../protocol/manifest.ts";

/** What a process plugin's tools run. */
export interface ProcessFacts {
  /** Its manifest.toml. */
  manifest: string;
  description: string | null;
  /** Each tool's command and arguments, and whether the command or its working folder is outside the plugin's folder. */
  runs: { tool: string; command: string; args: string[]; outside: string[] }[];
}

/** Reads the manifest.toml bytes the hash read; throws E_MANIFEST naming each problem. */
export function processFactsOf(path: string, bytes: Uint8Array | undefined): { manifest: Manifest; process: ProcessFacts } {
  if (!bytes) throw new CxError("E_LOAD", `${path} changed while the plugin's folder was being read`, { hint: "try again once nothing is writing to it" });
  const read = readProcessManifest(bytes);
  const invalid = (problems: { path: string; message: string }[]) =>
    new CxError("E_MANIFEST", `the Cortex process plugin's manifest ${path} has ${problems.length} problem${problems.length === 1 ? "" : "s"}:\n${describeProblems(problems)}`, {
      hint: "fix the manifest.toml: [[native.tools]] each with name, description and command (relative to its folder)",
      details: { path },
    });
  if (!read.ok) throw invalid(read.problems);
  const checked = checkManifest(read.plugin.manifest);
  if (!checked.ok) throw invalid(checked.problems);
  const runs = read.plugin.tools.map((t) => ({ tool: t.name, command: t.command, args: t.args, outside: [t.command, t.working_dir].filter((p): p is string => p !== undefined && isOutside(p)) }));
  return { manifest: checked.manifest, process: { manifest: path, description: read.plugin.description, runs } };
}
