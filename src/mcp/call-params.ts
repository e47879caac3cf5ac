/** The checks of a request's params: `tools/call`'s, which both paths share (the SDK's and fast-call.ts's), and `tools/list`'s cursor. */

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Why `params` of a `tools/call` cannot be served, in a sentence (the answer is JSON-RPC -32602);
 * null when it can. The SDK's own check answered -32603 with its schema library's dump.
 */
export function callParamsProblem(params: unknown): string | null {
  const shape = 'tools/call takes params {"name": "<a tool tools/list lists>", "arguments": {…}}';
  if (!isPlainObject(params)) return `${shape}; it got ${params === undefined ? "no params" : describe(params)}`;
  if (params.name === undefined) return `${shape}; params has no "name"`;
  if (typeof params.name !== "string") return `${shape}; its "name" is ${describe(params.name)}, not a string`;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) {
    return `tool '${params.name}': "arguments" must be an object of the tool's arguments (${shape}), not ${describe(params.arguments)}`;
  }
  return null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Tools per `tools/list` page (issue 42 point 4: one client caps at 100 tools a page). */
export const TOOLS_PAGE = 100;

/**
 * One page of `tools/list`: from the cursor (the index of its first tool, as a string this server
 * gave) on, with `nextCursor` while more are left. A cursor it did not give is -32602.
 */
export function toolsPage<T>(tools: readonly T[], cursor: string | undefined, size = TOOLS_PAGE): { tools: T[]; nextCursor?: string } {
  const from = cursor === undefined ? 0 : /^(0|[1-9]\d{0,8})$/.test(cursor) ? Number(cursor) : NaN;
  if (!(from >= 0 && from <= tools.length)) {
    throw Object.assign(new Error(`tools/list: the cursor ${JSON.stringify(cursor)} is not one this server gave; list again without a cursor`), { code: -32602 });
  }
  const page = tools.slice(from, from + size);
  return from + size < tools.length ? { tools: page, nextCursor: String(from + size) } : { tools: page };
}
