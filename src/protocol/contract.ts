/**
 * The facts of the native contract that a plugin host needs before any validation: the contract
 * numbers, the export names, the line cap and the manifest's depth limit. Nothing here imports a
 * validator, so the native plugin host starts without loading one (the parent validates what the
 * host describes: manifest.ts, checkDescribed).
 */

/** The contract numbers this build speaks (SPEC §3.2). */
export const CONTRACT_CURRENT = 4;
export const CONTRACT_OLDEST = 2;

export function contractInRange(n: number): boolean {
  return Number.isInteger(n) && n >= CONTRACT_OLDEST && n <= CONTRACT_CURRENT;
}

/** The longest line either side writes on the protocol pipes. */
export const LINE_CAP = 64 * 1024 * 1024;

export const OPTIONAL_EXPORTS = ["poll", "command", "attach"] as const;
export type OptionalExport = (typeof OPTIONAL_EXPORTS)[number];

export const MANDATORY_EXPORTS = [
  "cxagent_plugin_abi_version",
  "cxagent_plugin_describe",
  "cxagent_plugin_start",
  "cxagent_plugin_invoke",
  "cxagent_plugin_gate",
  "cxagent_plugin_stop",
  "cxagent_plugin_free",
] as const;

/**
 * How deeply a manifest may nest objects and arrays. Real ones nest a dozen levels (an inputSchema
 * of objects of arrays); past this the comparison and JSON printing would run out of stack.
 */
export const MANIFEST_DEPTH_LIMIT = 64;

/**
 * The path of the first value nested deeper than `limit` (`root` when it is the document itself),
 * or null. Iterative: any depth is safe. Manifests use it, and a call's arguments.
 */
export function tooDeep(input: unknown, limit = MANIFEST_DEPTH_LIMIT, root = "(the document)"): string | null {
  return deepest(input) < limit ? null : pathTooDeep(input, limit, root);
}

/**
 * How many levels of objects and arrays nest inside `input` (0 for a flat object or array, -1 for
 * a scalar), without building a path: the check above runs on every call's arguments, so the
 * common answer costs no strings, and a flat object (most arguments) no stack either.
 */
function deepest(input: unknown): number {
  if (input !== null && typeof input === "object" && isFlat(input)) return 0;
  const values: unknown[] = [input];
  const depths: number[] = [0];
  let most = 0;
  while (values.length) {
    const value = values.pop();
    const depth = depths.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth + 1 > most) most = depth + 1;
    if (Array.isArray(value)) {
      for (const child of value) {
        if (child !== null && typeof child === "object") values.push(child), depths.push(depth + 1);
      }
    } else {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const child = (value as Record<string, unknown>)[key];
        if (child !== null && typeof child === "object") values.push(child), depths.push(depth + 1);
      }
    }
  }
  return most - 1;
}

/** Whether no member of the object or array `value` is itself an object or array. */
function isFlat(value: object): boolean {
  if (Array.isArray(value)) {
    for (const child of value) if (child !== null && typeof child === "object") return false;
    return true;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (child !== null && typeof child === "object") return false;
  }
  return true;
}

function pathTooDeep(input: unknown, limit: number, root: string): string | null {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: input, depth: 0, path: "" }];
  while (stack.length) {
    const { value, depth, path } = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= limit) return path || root;
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [/^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`, v] as const);
    for (const [step, child] of entries) stack.push({ value: child, depth: depth + 1, path: path ? path + step : step.replace(/^\./, "") });
  }
  return null;
}

/** The problem text for a manifest nested too deeply at `path` (tooDeep's answer). */
export function tooDeepText(path: string): string {
  const shown = path.length > 120 ? `${path.slice(0, 120)}…` : path;
  return `${shown}: nested more than ${MANIFEST_DEPTH_LIMIT} levels deep, which no manifest needs`;
}
