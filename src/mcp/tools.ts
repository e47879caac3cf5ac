/**
 * How cxagent's tools and results look in MCP (research mcp-cortex.md §A1.2): pure functions, so
 * the mapping is tested without a process.
 */
import type { CxError, JobResult, Manifest, Tool } from "../index.ts";
import { type MediaContent, mediaContent } from "./media.ts";

/** A `tools/list` entry. `inputSchema` is the manifest's object itself, passed through verbatim. */
export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** The plugin's claims (issue 42), passed through when its manifest declares them. */
  annotations?: NonNullable<Tool["annotations"]>;
  outputSchema?: Record<string, unknown>;
  _meta: { "cxagent/plugin": string; "cxagent/gated": Tool["gated"] };
}

export function listedTool(manifest: Manifest, tool: Tool): ListedTool {
  return {
    name: tool.name,
    title: tool.title ?? `${manifest.name}: ${tool.name}`,
    // Some clients drop a tool whose description is empty (the conformance suite fails it).
    description: tool.description.trim() ? tool.description : `${tool.name} (from plugin ${manifest.name} ${manifest.version})`,
    inputSchema: tool.inputSchema as Record<string, unknown>,
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    // The facts, not hints: gated:false is no claim that a tool is read-only.
    _meta: { "cxagent/plugin": manifest.name, "cxagent/gated": tool.gated },
  };
}

export interface CallResult {
  [key: string]: unknown;
  content: [{ type: "text"; text: string }, ...MediaContent[]];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta: Record<string, unknown>;
}

/** The text a model reads: output.content, else the failure's message, else the output as JSON. */
function textOf(result: JobResult, tool: string): string {
  const content = result.output.content;
  if (typeof content === "string" && (content !== "" || result.success)) return content;
  if (content !== undefined && typeof content !== "string") return JSON.stringify(content);
  if (!result.success) return result.errorMessage ?? `${tool} failed (exit code ${result.exitCode}) and gave no message`;
  return Object.keys(result.output).length ? JSON.stringify(result.output) : "";
}

/** Whether a tool declares an outputSchema (the manifest key of issue 42 point 4). */
export function hasOutputSchema(tool: Tool | undefined): boolean {
  return typeof (tool as { outputSchema?: unknown } | undefined)?.outputSchema === "object";
}

/**
 * A call's MCP result. `structured`: the tool declares an outputSchema, so `output` goes as
 * `structuredContent` too; otherwise the model gets only the text (a client that shows
 * structuredContent to the model when present would show it the whole output instead).
 */
export function callResult(plugin: string, tool: string, result: JobResult, deniedHint?: string, structured = false, sandbox?: readonly string[] | null): CallResult {
  let text = textOf(result, tool);
  if (result.permissionDenied && deniedHint) text = `${text}\n${deniedHint}`;
  return {
    // A result's media attachments (a Cortex ToolResult's) follow its text (mcp/media.ts).
    content: [{ type: "text", text }, ...mediaContent(result.output.media)],
    ...(structured ? { structuredContent: result.output } : {}),
    isError: !result.success,
    _meta: {
      "cxagent/plugin": plugin,
      "cxagent/exitCode": result.exitCode,
      "cxagent/durationMs": result.durationMs,
      "cxagent/decidedBy": result.decidedBy,
      "cxagent/permissionDenied": result.permissionDenied,
      // The kernel layers the call ran under (issue 39), or "unconfined".
      ...(sandbox === undefined ? {} : { "cxagent/sandbox": sandbox === null ? "unconfined" : sandbox.join("+") }),
      ...(result.logFile === null ? {} : { "cxagent/logFile": result.logFile }),
    },
  };
}

/** A call that produced no result (a crash, a bad reply, a timeout, quarantine): the model sees why. */
export function failedCall(plugin: string, error: CxError): CallResult {
  return {
    content: [{ type: "text", text: error.hint ? `${error.message}\n${error.hint}` : error.message }],
    isError: true,
    _meta: { "cxagent/plugin": plugin, "cxagent/error": error.code },
  };
}

/** MCP's log levels, in order (RFC 5424 names). */
export const MCP_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const;
export type McpLevel = (typeof MCP_LEVELS)[number];

/** A plugin log level (SPEC §3.3: 0 trace … 5 critical) in MCP's words. */
export function mcpLevel(level: number): McpLevel {
  if (level <= 1) return "debug";
  if (level === 2) return "info";
  if (level === 3) return "warning";
  if (level === 4) return "error";
  return "critical";
}

export function isAtLeast(level: McpLevel, threshold: McpLevel): boolean {
  return MCP_LEVELS.indexOf(level) >= MCP_LEVELS.indexOf(threshold);
}

/**
 * Turns a call's progress and stream reports into `notifications/progress` values: `progress`
 * strictly increases (MCP's MUST), out of 100. A report that would not increase it (-1 "busy",
 * a repeat, streamed text) moves it a thousandth of the way left to 100; at 100 it is dropped.
 */
export class ProgressCounter {
  private last = -1;

  next(percent: number | null): number | null {
    const wanted = percent !== null && percent >= 0 ? Math.min(percent, 100) : -1;
    if (wanted > this.last) return (this.last = wanted);
    const from = Math.max(this.last, 0);
    const nudged = from + (100 - from) / 1000;
    if (!(nudged > this.last) || nudged > 100) return null;
    return (this.last = nudged);
  }
}

/** Control characters (but newline and tab) as visible escapes: plugin text shown by a client. */
export function visible(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
