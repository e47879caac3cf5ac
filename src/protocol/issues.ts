import type * as v from "valibot";

/** One problem found in a document, with the JSON path it sits at (`tools[2].gated`). */
export interface Problem {
  path: string;
  message: string;
}

type AnyIssue = v.BaseIssue<unknown>;

/** Formats a valibot issue path as `tools[2].gated`; the empty path is the document itself. */
export function formatPath(path: readonly unknown[] | undefined): string {
  let out = "";
  for (const item of path ?? []) {
    const key = (item as { key?: unknown }).key;
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string") out += /^[A-Za-z_$][\w$]*$/.test(key) ? (out ? `.${key}` : key) : `[${JSON.stringify(key)}]`;
  }
  return out;
}

/**
 * Turns valibot issues into problems a person can act on. Unknown keys are refused by name,
 * missing ones named as required; every other issue keeps the schema's own message.
 */
export function toProblems(issues: readonly AnyIssue[], documentName: string): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = formatPath(issue.path);
    if (issue.type === "strict_object" && issue.expected === "never") {
      const key = String((issue.path?.at(-1) as { key?: unknown } | undefined)?.key);
      const owner = formatPath(issue.path?.slice(0, -1)) || documentName;
      problems.push({ path, message: `${owner} declares '${key}', which this build does not service` });
    } else if (issue.type === "strict_object" && issue.input === undefined) {
      problems.push({ path, message: `${path} is required` });
    } else {
      problems.push({ path, message: path ? `${path}: ${issue.message}` : issue.message });
    }
  }
  return problems;
}

/** "a string", "null", "an array" ... for messages about values of the wrong kind. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${preview(JSON.stringify(value), 60)}`;
  return `${typeof value} ${String(value)}`;
}

/** A bounded, single-line preview of a text for error messages (at most `max` characters). */
export function preview(text: string, max = 200): string {
  const chars = Array.from(text);
  const flat = (chars.length > max ? chars.slice(0, max).join("") + "…" : text).replace(/[\r\n]+/g, " ");
  return flat;
}
