/** The check of a `tools/call`'s params that both paths share (the SDK's and fast-call.ts's). */

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
