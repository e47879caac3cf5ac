/**
 * Redaction by exact value (issue 40): every form of a secret's bytes that a plugin's text could
 * carry — raw, JSON-escaped, base64 (standard and URL-safe, with and without padding), hex (lower
 * and upper case), percent-encoding (any subset of bytes escaped, either case, `+` for a space) —
 * becomes `[REDACTED:<name>]`. Only the values a session resolved are known: nothing is guessed by
 * pattern, so a look-alike is never touched and an unknown format is never missed. A plugin that
 * transforms a value some other way (XOR, reversed, split across two results) is not caught: this
 * guards against accidents, not a hostile plugin. Imports nothing: host/ applies it where plugin
 * text enters the parent.
 */

/** The marker a secret becomes; a call whose arguments hold it is refused (the model echoed it). */
export const MARKER_PREFIX = "[REDACTED:";
export const marker = (name: string) => `${MARKER_PREFIX}${name}]`;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** The fixed-text forms of `value`: raw, JSON-escaped, base64 ×4, hex ×2 (each at least 1 character). */
export function formsOf(value: Uint8Array): string[] {
  const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const forms = new Set<string>();
  const raw = new TextDecoder("utf-8", { fatal: false }).decode(value);
  // A value that is not UTF-8 reaches text only encoded; its raw form would be U+FFFD soup.
  if (!raw.includes("\uFFFD")) {
    forms.add(raw);
    forms.add(JSON.stringify(raw).slice(1, -1));
  }
  const base64 = buffer.toString("base64");
  const url = buffer.toString("base64url");
  forms.add(base64);
  forms.add(base64.replace(/=+$/, ""));
  forms.add(url);
  forms.add(url + "=".repeat(base64.length - base64.replace(/=+$/, "").length));
  const hex = buffer.toString("hex");
  forms.add(hex);
  forms.add(hex.toUpperCase());
  forms.delete("");
  return [...forms];
}

/** Bytes an encoder may leave as they are: what no percent-encoder is obliged to escape. */
const LITERAL_OK = /[A-Za-z0-9\-._~!*'()/:@,;=$&+?]/;

/** A pattern for `value` percent-encoded, any byte escaped or not (case-insensitive hex), a space as `+` too. */
function percentPattern(value: Uint8Array): string {
  let pattern = "";
  for (const byte of value) {
    const hex = byte.toString(16).padStart(2, "0");
    const escaped = `%${/\d/.test(hex[0]!) ? hex[0] : `[${hex[0]}${hex[0]!.toUpperCase()}]`}${/\d/.test(hex[1]!) ? hex[1] : `[${hex[1]}${hex[1]!.toUpperCase()}]`}`;
    const char = String.fromCharCode(byte);
    if (byte < 0x80 && LITERAL_OK.test(char)) pattern += `(?:${escapeRegExp(char)}|${escaped})`;
    else if (byte === 0x20) pattern += `(?:\\+|${escaped})`;
    else pattern += escaped;
  }
  return pattern;
}

interface Entry {
  name: string;
  value: Uint8Array;
  forms: string[];
  percent: string;
}

/** Where a secret's form lies in a text (merged: `name` is its longest match's). */
export interface Span {
  start: number;
  end: number;
  name: string;
}

/** `text` up to `cut`, each span wholly before the cut replaced by its marker. */
function render(text: string, spans: readonly Span[], cut: number): string {
  let out = "";
  let at = 0;
  for (const span of spans) {
    if (span.end > cut) break;
    out += text.slice(at, span.start) + marker(span.name);
    at = span.end;
  }
  return out + text.slice(at, cut);
}

const isHex = (c: string | undefined) => c !== undefined && /^[0-9A-Fa-f]$/.test(c);

/** Whether `text` is a proper start of `value` percent-encoded (as percentPattern matches it). */
function startsPercentForm(value: Uint8Array, text: string): boolean {
  let at = 0;
  for (const byte of value) {
    if (at === text.length) return true;
    const c = text[at]!;
    if (c === "%") {
      const digits = text.slice(at + 1, at + 3);
      if (![...digits].every(isHex)) return false;
      if (digits.length < 2) return at + 1 + digits.length === text.length && (digits === "" || parseInt(digits, 16) === byte >> 4);
      if (parseInt(digits, 16) !== byte) return false;
      at += 3;
    } else if ((byte < 0x80 && LITERAL_OK.test(c) && c.charCodeAt(0) === byte) || (byte === 0x20 && c === "+")) {
      at += 1;
    } else return false;
  }
  return false; // the whole value fitted: a complete form, redacted already
}

/**
 * The secrets known so far, and their forms. `add` as a value is resolved; every method reads the
 * current set, so a connection made before a secret was resolved redacts it from then on.
 */
export class Redactor {
  private readonly entries = new Map<string, Entry>();
  private fixed: RegExp | null = null;
  private percent: RegExp | null = null;
  private formName = new Map<string, string>();
  private longest = 0;

  get active(): boolean {
    return this.entries.size > 0;
  }

  /** Knows `value` as secret `name` from now on (a name added again takes its new value too). */
  add(name: string, value: Uint8Array): void {
    const key = `${name}\0${Buffer.from(value).toString("base64")}`;
    if (this.entries.has(key)) return;
    this.entries.set(key, { name, value: Uint8Array.from(value), forms: formsOf(value), percent: percentPattern(value) });
    this.compile();
  }

  private compile() {
    this.formName = new Map();
    for (const entry of this.entries.values()) for (const form of entry.forms) if (!this.formName.has(form)) this.formName.set(form, entry.name);
    const forms = [...this.formName.keys()].sort((a, b) => b.length - a.length);
    this.longest = Math.max(forms[0]?.length ?? 0, ...[...this.entries.values()].map((e) => e.value.length * 3));
    this.fixed = forms.length ? new RegExp(forms.map(escapeRegExp).join("|"), "g") : null;
    const entries = [...this.entries.values()];
    this.percent = entries.length ? new RegExp(entries.map((e) => `(${e.percent})`).join("|"), "g") : null;
    this.percentNames = entries.map((e) => e.name);
  }
  private percentNames: string[] = [];

  /** `text` with every known form of every secret replaced by its marker. */
  text(text: string): string {
    if (!this.fixed || text.length === 0) return text;
    return render(text, this.spans(text), text.length);
  }

  /**
   * Where known forms lie in `text`: every match at every start (one secret inside or overlapping
   * another included), merged where they overlap, each merged span named by its longest match. So
   * no byte of any matched form is left beside a marker, whichever secret matched first.
   */
  spans(text: string): Span[] {
    const found: Span[] = [];
    const collect = (pattern: RegExp, nameOf: (m: RegExpExecArray) => string) => {
      pattern.lastIndex = 0;
      for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
        found.push({ start: m.index, end: m.index + m[0].length, name: nameOf(m) });
        pattern.lastIndex = m.index + 1; // a form starting inside this one is found too
      }
    };
    if (this.fixed) collect(this.fixed, (m) => this.formName.get(m[0])!);
    // Percent-encoded forms need a '%' (or a '+' for a space), and are rare: the slower pattern runs only then.
    if (this.percent && (text.includes("%") || text.includes("+"))) collect(this.percent, (m) => this.percentNames[m.slice(1).findIndex((g) => g !== undefined)]!);
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    const merged: Span[] = [];
    let longest = 0;
    for (const span of found) {
      const last = merged[merged.length - 1];
      const length = span.end - span.start;
      if (!last || span.start >= last.end) {
        merged.push({ ...span });
        longest = length;
        continue;
      }
      if (length > longest) [last.name, longest] = [span.name, length];
      last.end = Math.max(last.end, span.end);
    }
    return merged;
  }

  /** A JSON value with every string in it (keys too) redacted; the same value when nothing changed. */
  value<T>(value: T): T {
    if (!this.fixed) return value;
    return this.walk(value, 0) as T;
  }

  private walk(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.text(value);
    if (value === null || typeof value !== "object") return value;
    if (depth > 256) return this.deep(value);
    if (Array.isArray(value)) {
      let changed = false;
      const next = value.map((item) => {
        const r = this.walk(item, depth + 1);
        changed ||= r !== item;
        return r;
      });
      return changed ? next : value;
    }
    let changed = false;
    const next: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const k = this.text(key);
      const r = this.walk(item, depth + 1);
      changed ||= k !== key || r !== item;
      Object.defineProperty(next, k, { value: r, enumerable: true, writable: true, configurable: true });
    }
    return changed ? next : value;
  }

  /** A value nested deeper than is walked: redacted as its JSON text (whole, as that text, if redacting broke it). */
  private deep(value: object): unknown {
    const json = JSON.stringify(value);
    const redacted = this.text(json);
    if (redacted === json) return value;
    try {
      return JSON.parse(redacted) as unknown;
    } catch {
      return redacted;
    }
  }

  /**
   * A redactor for one stream of chunks: each chunk's text comes out redacted, less a tail that
   * could be the start of a form the next chunk completes; that tail comes with the next chunk,
   * or from `end()`.
   */
  stream(): StreamRedactor {
    return new StreamRedactor(this);
  }

  /** The longest suffix of `text` that is a proper start of a known form (its length, 0 for none). */
  heldTail(text: string): number {
    const most = Math.min(text.length, this.longest - 1);
    for (let n = most; n > 0; n--) {
      const tail = text.slice(text.length - n);
      for (const form of this.formName.keys()) if (form.length > n && form.startsWith(tail)) return n;
      for (const entry of this.entries.values()) if (startsPercentForm(entry.value, tail)) return n;
    }
    return 0;
  }
}

export class StreamRedactor {
  private held = "";
  constructor(private readonly redactor: Redactor) {}

  /**
   * The text of this chunk that can go out now, redacted. What is held back is the raw text from
   * the start of any form that could still grow: a tail that is a proper start of a known form (a
   * shorter secret's whole form inside a longer one's start included), and any match reaching
   * into that tail. Redacting first and holding after would let a shorter secret's marker cut a
   * longer secret in two, and its other bytes out.
   */
  push(chunk: string): string {
    if (!this.redactor.active) return this.held + chunk;
    const text = this.held + chunk;
    const spans = this.redactor.spans(text);
    let cut = text.length - this.redactor.heldTail(text);
    for (const span of spans) if (span.start < cut && span.end > cut) cut = span.start;
    this.held = text.slice(cut);
    return render(text, spans, cut);
  }

  /** What was held back, redacted: the stream has ended. */
  end(): string {
    const rest = this.redactor.text(this.held);
    this.held = "";
    return rest;
  }
}
