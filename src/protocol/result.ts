/**
 * What a call produces (SPEC §4.4): the JobResult a tool returns, normalized with its defaults, and
 * the context start receives.
 */
import * as v from "valibot";

const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

const orDefault = <T extends v.GenericSchema>(schema: T, value: v.InferOutput<T>) =>
  v.optional(v.fallback(schema, value as never), value as never);

export const JobResultSchema = v.object({
  success: orDefault(v.boolean(), false),
  exitCode: orDefault(v.pipe(v.number(), v.integer()), 0),
  errorMessage: orDefault(v.nullable(v.string()), null),
  permissionDenied: orDefault(v.boolean(), false),
  decidedBy: orDefault(v.nullable(v.picklist(["user", "policy"])), null),
  output: orDefault(
    v.custom<Record<string, unknown>>((x) => isPlainObject(x), "output must be a JSON object"),
    {},
  ),
  logFile: orDefault(v.nullable(v.string()), null),
  durationMs: v.optional(v.fallback(v.pipe(v.number(), v.integer(), v.minValue(0)), undefined as never)),
});
export type JobResult = Omit<v.InferOutput<typeof JobResultSchema>, "durationMs"> & { durationMs: number };

/**
 * Normalizes a plugin's `result` object exactly as JobResultSchema does (a test holds the two
 * together), written out by hand because it runs on every call. The host's own measured duration
 * fills a missing one.
 */
export function toJobResult(r: Record<string, unknown>, measuredMs: number): JobResult {
  const d = r.durationMs;
  return {
    success: typeof r.success === "boolean" ? r.success : false,
    exitCode: Number.isInteger(r.exitCode) ? (r.exitCode as number) : 0,
    errorMessage: typeof r.errorMessage === "string" ? r.errorMessage : null,
    permissionDenied: typeof r.permissionDenied === "boolean" ? r.permissionDenied : false,
    decidedBy: r.decidedBy === "user" || r.decidedBy === "policy" ? r.decidedBy : null,
    output: isPlainObject(r.output) ? r.output : {},
    logFile: typeof r.logFile === "string" ? r.logFile : null,
    durationMs: Number.isInteger(d) && (d as number) >= 0 ? (d as number) : Math.round(measuredMs),
  };
}

export function deniedResult(decidedBy: "user" | "policy", message: string): JobResult {
  return {
    success: false,
    exitCode: 0,
    errorMessage: message,
    permissionDenied: true,
    decidedBy,
    output: { content: message },
    logFile: null,
    durationMs: 0,
  };
}


/** What a command answers (SPEC §4.5); NULL from the plugin reads as "reported, nothing to say". */
export const CommandResultSchema = v.strictObject({
  message: v.nullable(v.string()),
  status: v.picklist(["reported", "changed", "refused"]),
});
export type CommandResult = v.InferOutput<typeof CommandResultSchema>;

/** Work a client plugin submits through poll (SPEC §4.5). */
export interface Submit {
  plugin: string;
  goal: string;
  wantResult: false;
}
