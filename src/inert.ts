/**
 * Text from a plugin or its folder (names, versions, descriptions, file names, READMEs, gate
 * wording, logs, streamed output) made inert for a terminal (SPEC §6.3): every character a
 * terminal would act on instead of showing is shown as an escape a person can read, so no plugin
 * can move the cursor, clear the screen, recolour, retitle, or reorder what cxagent prints.
 *
 * - C0 controls, DEL and C1 controls: `\x1b`, `\x07`, `\x7f`, `\x9b` ...
 * - bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C):
 *   `\u202e` ..., since they reorder what follows them on the line;
 * - in single-line text also zero-width characters (U+200B–U+200D, U+2060, U+FEFF) and line and
 *   paragraph separators, which can hide or fake what a name or a path says.
 *
 * `inert` is for one-line fields: newlines and tabs are escaped too, so a field cannot start a
 * line of its own. `inertBlock` is for multi-line text: it keeps newlines and tabs (a CRLF reads
 * as a newline) and escapes everything else, a lone carriage return included.
 */

const LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g;
const BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const BLOCK_TEST = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const LINE_TEST = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/;

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escape(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.charCodeAt(0);
  // C0 and C1 (up to U+009F) as \xNN; the rest matched (U+061C and up) as \uNNNN
  return code <= 0x9f ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** One line of plugin text, safe to print: every control and invisible character escaped. */
export function inert(text: string): string {
  return LINE_TEST.test(text) ? text.replace(LINE, escape) : text;
}

/** Multi-line plugin text, safe to print: newlines and tabs kept, everything else escaped. */
export function inertBlock(text: string): string {
  const unified = text.replace(/\r\n/g, "\n");
  return BLOCK_TEST.test(unified) ? unified.replace(BLOCK, escape) : unified;
}
