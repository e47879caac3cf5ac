/**
 * Large results in `cxagent mcp` (issue 41): the delivery cap (100 KiB by default, or the size the
 * client asks for in the call's `_meta`), a spilled result's `resource_link` block and `_meta`
 * entry, and the built-in tool `cxagent_read_result` that pages through a stored result.
 */
import { DELIVERY_CAP_DEFAULT, DELIVERY_CAP_MIN, isCxError, type JobResult, readPage, type Session } from "../index.ts";
import type { CallResult, ListedTool } from "./tools.ts";

export const READ_RESULT_TOOL = "cxagent_read_result";

/** The delivery cap a call's `_meta` asks for (`cxagent/maxOutputBytes`, or Claude Code's `anthropic/maxResultSizeChars`), if any. */
export function askedCap(meta: Record<string, unknown> | undefined): number | undefined {
  for (const key of ["cxagent/maxOutputBytes", "anthropic/maxResultSizeChars"]) {
    const value = meta?.[key];
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return Math.max(value, DELIVERY_CAP_MIN);
  }
  return undefined;
}

/** The options a plugin call in MCP gets: its cap, asked for or the default. */
export function deliveryOptions(meta: Record<string, unknown> | undefined) {
  return { maxOutputBytes: askedCap(meta), defaultMaxOutputBytes: DELIVERY_CAP_DEFAULT };
}

/** A call's MCP result, with a spilled result's link and `_meta` entry. */
export function withSpill(call: CallResult, result: JobResult): CallResult {
  const spilled = result.spilled;
  if (!spilled) return call;
  const link = {
    type: "resource_link" as const,
    uri: spilled.ref,
    name: `sha256-${spilled.sha256}`,
    mimeType: "text/plain",
    size: spilled.bytes,
    description: `the whole result (${spilled.bytes} bytes); read it in pages with ${READ_RESULT_TOOL}, or pass ${spilled.ref} as a tool's argument`,
  };
  return { ...call, content: [...call.content, link] as CallResult["content"], _meta: { ...call._meta, "cxagent/result": spilled } };
}

/**
 * Whether cxagent_read_result is listed: from the first result this server spilled on (the
 * clients are told the list changed); before that it is not in the way. It answers calls always.
 */
export class ResultToolListing {
  private listed = false;

  tools(): ListedTool[] {
    return this.listed ? [readResultTool()] : [];
  }

  saw(result: JobResult, listChanged: () => void): void {
    if (!result.spilled || this.listed) return;
    this.listed = true;
    listChanged();
  }
}

export function readResultTool(): ListedTool {
  return {
    name: READ_RESULT_TOOL,
    title: "cxagent: read a stored result",
    description:
      "Read a result that was too long to return whole, by its reference (cxref:sha256-…), a page at a time: `offset` is the first byte (default 0), `length` how many bytes (default and most: the delivery cap). The answer says where the next page starts. A reference can also be passed as-is as any tool's string argument.",
    inputSchema: {
      type: "object",
      properties: {
        ref: { type: "string", pattern: "^cxref:sha256-[0-9a-f]{64}$", description: "The reference, as a result gave it" },
        offset: { type: "integer", minimum: 0, description: "The first byte to read (default 0)" },
        length: { type: "integer", minimum: 1, description: "How many bytes to read (default and most: the delivery cap)" },
      },
      required: ["ref"],
      additionalProperties: false,
    },
    _meta: { "cxagent/plugin": "cxagent", "cxagent/gated": false },
  };
}

/** A call of cxagent_read_result: one page, capped by the delivery cap; a bad or unknown reference is the call's error. */
export function readResultCall(session: Session, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined): CallResult {
  const cap = askedCap(meta) ?? DELIVERY_CAP_DEFAULT;
  const ref = args?.ref;
  const offset = args?.offset ?? 0;
  const length = args?.length ?? cap;
  const problem =
    typeof ref !== "string" ? "needs `ref`, the reference a result gave (cxref:sha256-…)" : !isCount(offset, 0) ? "takes `offset` as a whole number, 0 or more" : !isCount(length, 1) ? "takes `length` as a whole number, 1 or more" : null;
  if (problem) return failed(`${READ_RESULT_TOOL} ${problem}`, "E_INVALID_INPUT");
  try {
    const page = readPage(session.results, ref as string, offset as number, Math.min(length as number, cap));
    const { text, ...facts } = page;
    const more = page.next === null ? "" : `\n[… bytes ${page.offset} to ${page.offset + page.length} of ${page.bytes}; the next page starts at offset ${page.next}]`;
    return { content: [{ type: "text", text: text + more }], structuredContent: facts, isError: false, _meta: { "cxagent/plugin": "cxagent", "cxagent/result": facts } };
  } catch (error) {
    if (!isCxError(error)) throw error;
    return failed(error.hint ? `${error.message}\n${error.hint}` : error.message, error.code);
  }
}

const isCount = (x: unknown, min: number) => typeof x === "number" && Number.isInteger(x) && x >= min;

function failed(text: string, code: string): CallResult {
  return { content: [{ type: "text", text }], isError: true, _meta: { "cxagent/plugin": "cxagent", "cxagent/error": code } };
}
