/**
 * What a call produces (SPEC §4.4): the JobResult a tool returns, normalized with its defaults, and
 * the context start receives.
 */
import * as v from "valibot";

const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

const orDefault = <T extends v.GenericSchema>(schema: T, value: v.InferOutput<T>) =>
  v.optional(v.fallback(schema, value as never), value as never);

const JobResultFieldsSchema = v.object({
  success: orDefault(v.boolean(), false),
  exitCode: orDefault(v.pipe(v.number(), v.integer()), 0),
  errorMessage: orDefault(v.nullable(v.string()), null),
  permissionDenied: orDefault(v.boolean(), false),
  decidedBy: v.optional(v.unknown()),
  output: orDefault(
    v.custom<Record<string, unknown>>((x) => isPlainObject(x), "output must be a JSON object"),
    {},
  ),
  logFile: orDefault(v.nullable(v.string()), null),
  durationMs: v.optional(v.fallback(v.pipe(v.number(), v.integer(), v.minValue(0)), undefined as never)),
});

/** Only cxagent says who decided a permission: a plugin that names a decider or a denial is making its own claim. */
const pluginClaim = (permissionDenied: boolean, decidedBy: unknown): DecidedBy | null =>
  permissionDenied || (decidedBy !== undefined && decidedBy !== null) ? "plugin" : null;

export const JobResultSchema = v.pipe(
  JobResultFieldsSchema,
  v.transform((r) => ({ ...r, decidedBy: pluginClaim(r.permissionDenied, r.decidedBy) })),
);
/** What a tool may return: every field optional, with the defaults above. */
export type JobResultInput = v.InferInput<typeof JobResultFieldsSchema>;
export type JobResult = Omit<v.InferOutput<typeof JobResultSchema>, "durationMs"> & { durationMs: number; spilled?: Spilled };

/**
 * A result whose output.content was over the caller's delivery cap (issue 41): its content is a
 * head, a line saying what was left out and a tail; the whole text is stored under `ref`.
 */
export interface Spilled {
  truncated: true;
  /** The whole content's length in UTF-8 bytes, and their SHA-256 (hex). */
  bytes: number;
  sha256: string;
  /** `cxref:sha256-<hex>`: readable through the state folder that stored it. */
  ref: string;
}

/**
 * Who decided a permission. "user" and "policy" are cxagent's own decisions, made before the call
 * reached the plugin; "plugin" marks a result in which the plugin itself named a decider or a
 * denial — its claim, never taken for cxagent's.
 */
export type DecidedBy = "user" | "policy" | "plugin";

/** Whether cxagent itself denied the call (it never reached the plugin). */
export function isDeniedByHost(result: JobResult): boolean {
  return result.permissionDenied && (result.decidedBy === "user" || result.decidedBy === "policy");
}

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
    decidedBy: pluginClaim(r.permissionDenied === true, r.decidedBy),
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

export type CommandResultInput = v.InferInput<typeof CommandResultSchema>;

/** A gate's answer that asks (SPEC §4.5, §7); no answer (NULL) means no prompt. */
export const GateAnswerSchema = v.object({
  display: v.string(),
  alwaysAskable: v.optional(v.boolean()),
});
export type GateAnswerInput = v.InferInput<typeof GateAnswerSchema>;

/** What poll hands back to start work (SPEC §4.5): wantResult true is refused, never downgraded. */
export const SubmitRequestSchema = v.object({
  goal: v.string(),
  wantResult: v.optional(v.literal(false)),
});
export type SubmitRequestInput = v.InferInput<typeof SubmitRequestSchema>;

/** Work a client plugin submits through poll (SPEC §4.5). */
export interface Submit {
  plugin: string;
  goal: string;
  wantResult: false;
}
