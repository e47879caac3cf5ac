/**
 * Tool-name patterns, the dialect of `tools.allow`, `tools.deny` and `tools.ask` (SPEC §6.2):
 *
 *   - `*` matches any run of characters, the empty one included; `?` matches exactly one;
 *   - every other character matches itself, case-sensitively;
 *   - a pattern matches a whole tool name (anchored at both ends): `calc` matches only `calc`;
 *   - a pattern holds only what a tool name may hold (A–Z, a–z, 0–9, `_`, `-`) plus `*` and `?`,
 *     1 to 128 characters. Anything else (`.`, `[`, a space, `/`) could never match a tool name,
 *     so it is refused instead of silently matching nothing.
 *
 * Matching is the classic greedy two-pointer walk that backs up to the last `*`: at most
 * pattern × name steps, never the exponential backtracking a regular expression can take.
 */
import * as v from "valibot";

const PATTERN = /^[A-Za-z0-9_*?-]{1,128}$/;

export const TOOL_PATTERN_RULE = "a tool-name pattern: letters, digits, '_' and '-', with '*' for any run of characters and '?' for one (anchored, case-sensitive)";

export const ToolPatternSchema = v.pipe(
  v.string(),
  v.check((p) => PATTERN.test(p), (issue) => `${JSON.stringify(issue.input)} is not ${TOOL_PATTERN_RULE}`),
);

export const ToolPatternsSchema = v.array(ToolPatternSchema);

export function isToolPattern(pattern: string): boolean {
  return PATTERN.test(pattern);
}

/** Whether `pattern` matches the whole of `name`. */
export function matchesTool(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    const c = pattern[p];
    if (c === "?" || (c !== undefined && c !== "*" && c === name[n])) {
      p++;
      n++;
    } else if (c === "*") {
      star = p++;
      resume = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
