/**
 * The wire protocol between the parent and a plugin host (SPEC §5): newline-delimited JSON,
 * requests on the host's stdin, the startup line, replies and events on its stdout.
 */
import * as v from "valibot";
import { LINE_CAP, MANDATORY_EXPORTS, OPTIONAL_EXPORTS, type OptionalExport } from "./contract.ts";

export { LINE_CAP, MANDATORY_EXPORTS, OPTIONAL_EXPORTS, type OptionalExport };

export const StartupLineSchema = v.variant("ready", [
  v.object({
    ready: v.literal(true),
    contract: v.number(),
    manifest: v.unknown(),
    exports: v.array(v.string()),
    /**
     * Tools with a default invoke deadline of their own, which the parent enforces when a call
     * gives none (a Cortex descriptor's timeout_secs).
     */
    deadlines: v.optional(v.array(v.object({ tool: v.string(), ms: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(0x7fffffff)) }))),
    /** What the plugin says it is, in a sentence (a Cortex plugin_info's description). */
    about: v.optional(v.string()),
  }),
  v.object({
    ready: v.literal(false),
    error: v.string(),
    /** Which step refused: "load", "exports", "handshake", "manifest" or "shim". */
    reason: v.optional(v.string()),
  }),
]);
export type StartupLine = v.InferOutput<typeof StartupLineSchema>;
export type ToolDeadline = NonNullable<Extract<StartupLine, { ready: true }>["deadlines"]>[number];

/** What went wrong when the plugin host, not the plugin, turned a call into a failure. */
export const FaultSchema = v.picklist(["bad-reply", "missing-export", "bad-request", "internal", "busy"]);
export type Fault = v.InferOutput<typeof FaultSchema>;

export const ReplySchema = v.variant("ok", [
  v.object({
    id: v.number(),
    ok: v.literal(true),
    result: v.optional(v.unknown()),
    gate: v.optional(v.unknown()),
    command: v.optional(v.unknown()),
  }),
  v.object({
    id: v.number(),
    ok: v.literal(false),
    error: v.string(),
    fault: v.optional(FaultSchema),
  }),
]);
export type Reply = v.InferOutput<typeof ReplySchema>;

/**
 * Reads a reply: the common shapes are checked by hand (this runs on every call), anything else
 * through ReplySchema, so the outcome is the schema's either way.
 */
export function parseReply(m: Record<string, unknown>): Reply | null {
  if (typeof m.id === "number") {
    if (m.ok === true && !("error" in m) && !("fault" in m)) return m as Reply;
    if (m.ok === false && typeof m.error === "string" && (m.fault === undefined || isFault(m.fault))) return m as Reply;
  }
  const parsed = v.safeParse(ReplySchema, m);
  return parsed.success ? parsed.output : null;
}

const FAULTS = new Set<unknown>(FaultSchema.options);
const isFault = (x: unknown) => FAULTS.has(x);

/**
 * What a plugin host in check mode (--check, for `cxagent check`) saw, one line per observation
 * (ffi/shim/95-check.c, 96-check-table.c). `what: "returned"`, when the host released a string an export returned:
 * `export` (describe, start, invoke, gate, stop, poll, command); `where` it lay ("heap",
 * "plugin-read-only", "plugin-writable", "library", "stack"); `repeated` (returned again while an
 * earlier return was not yet freed); `released` by cxagent_plugin_free ("yes", "no", "unknown",
 * "skipped": not freed at all, since freeing it would crash or free it twice); `length`; and a
 * `preview` of the text when something is wrong. `what: "host-table"`, a misuse of a host-table
 * function: `function`, `misuse` ("outside-call", "after-return", "after-stop", "out-of-range",
 * "bad-call-id") and `from`, the export the thread was in ("thread": none, a thread of its own).
 * A Cortex plugin's (ffi/shim/97-check-cortex.c): "returned" names the table function as `export`
 * (plugin_info, tool_descriptor, tool_execute), `free` "buffer_free", `where` may be "lent" (the
 * host's own lent memory), `repeated` a buffer buffer_free had already released, and `cap`;
 * `what: "lent"`, a buffer the host lent tool_execute (`buffer`: tool_name, input_json,
 * invocation_json) that the plugin freed. An ordinary plugin host never writes one.
 */
export const CheckEventSchema = v.object({
  event: v.literal("check"),
  what: v.picklist(["returned", "host-table", "lent"]),
  export: v.optional(v.string()),
  free: v.optional(v.string()),
  cap: v.optional(v.number()),
  buffer: v.optional(v.string()),
  where: v.optional(v.string()),
  repeated: v.optional(v.boolean()),
  released: v.optional(v.string()),
  length: v.optional(v.number()),
  preview: v.optional(v.string()),
  function: v.optional(v.string()),
  misuse: v.optional(v.string()),
  from: v.optional(v.string()),
});
export type CheckEvent = v.InferOutput<typeof CheckEventSchema>;

export const EventSchema = v.variant("event", [
  v.object({ event: v.literal("progress"), id: v.number(), percent: v.number(), text: v.string() }),
  v.object({ event: v.literal("log"), id: v.number(), level: v.number(), text: v.string() }),
  v.object({ event: v.literal("stream"), id: v.number(), text: v.string() }),
  v.object({ event: v.literal("submit"), goal: v.optional(v.unknown()), wantResult: v.optional(v.unknown()) }),
  /** A process the plugin registered; `ack` > 0 asks the parent to confirm once it is recorded. */
  v.object({ event: v.literal("child"), pid: v.number(), startTime: v.string(), ack: v.optional(v.number()) }),
  /** The plugin asks for its secret `name` (issue 40); the parent answers with a `secret` notice of the same `seq`. */
  v.object({ event: v.literal("secret"), name: v.string(), seq: v.number() }),
  /** Written before each startup step, so a crash there can name the export it happened in. */
  v.object({ event: v.literal("phase"), name: v.string() }),
  CheckEventSchema,
]);
export type WireEvent = v.InferOutput<typeof EventSchema>;

export type Request =
  | { id: number; kind: "start"; context: object }
  | { id: number; kind: "invoke"; tool: string; arguments: object }
  | { id: number; kind: "gate"; tool: string; arguments: object }
  | { id: number; kind: "command"; name: string; text: string }
  | { id: number; kind: "stop" }
  | { id: number; kind: "ack"; seq: number }
  /** The answer to a `secret` event: its value as base64, or why not ("undeclared", "unbound", "unavailable"). */
  | { id: number; kind: "secret"; seq: number; value?: string; error?: string }
  /**
   * The parent gave up on call `call` (its deadline passed, its caller cancelled, or it was sent
   * ahead and refused as busy): a module plugin's call sees its `signal` abort with `reason` (the
   * parent's error code). It gets no reply. A native plugin host ignores it: native code cannot
   * be interrupted, and its late answer is discarded as before.
   */
  | { id: number; kind: "cancel"; call: number; reason: string };

/** Requests that get no reply. */
export type Notice = Extract<Request, { kind: "ack" | "cancel" | "secret" }>;

/** The export each request kind calls, for messages. */
export const EXPORT_OF: Record<Exclude<Request["kind"], Notice["kind"]>, string> = {
  start: "cxagent_plugin_start",
  invoke: "cxagent_plugin_invoke",
  gate: "cxagent_plugin_gate",
  command: "cxagent_plugin_command",
  stop: "cxagent_plugin_stop",
};

/** The same for a Cortex plugin (whose start calls nothing; its shim adapter answers ok). */
export const CORTEX_EXPORT_OF: typeof EXPORT_OF = {
  start: "start (no Cortex function)",
  invoke: "tool_execute",
  gate: "gate (no Cortex function)",
  command: "command (no Cortex function)",
  stop: "plugin_drop",
};

/** The same for a Cortex process plugin: its plugin host runs a tool's command, one process per call. */
export const PROCESS_EXPORT_OF: typeof EXPORT_OF = {
  start: "start (nothing to run)",
  invoke: "the tool's command",
  gate: "gate (no Cortex function)",
  command: "command (no Cortex function)",
  stop: "stop (nothing to run)",
};

/** The same for a module plugin: the function of its definePlugin object each request calls. */
export const FUNCTION_OF: typeof EXPORT_OF = {
  start: "start()",
  invoke: "invoke()",
  gate: "gate()",
  command: "command()",
  stop: "stop()",
};
