/** Redaction's forms and held tails, case by case (issue 40): what each encoder may write, what a stream must hold back, and what it must not. */
import { expect, test } from "bun:test";
import { formsOf, marker, MARKER_PREFIX, Redactor } from "../../src/secrets/redact.ts";

const enc = (text: string) => new TextEncoder().encode(text);

test("the marker, and the forms of a value: raw and JSON-escaped only when it is UTF-8, base64 four ways, hex two ways, nothing empty", () => {
  expect(marker("a.b")).toBe("[REDACTED:a.b]");
  expect(MARKER_PREFIX).toBe("[REDACTED:");
  // (Its URL-safe forms are the standard ones here: no '+' or '/'; each form once.)
  expect(formsOf(enc('ab"c\\d\n'))).toEqual(['ab"c\\d\n', 'ab\\"c\\\\d\\n', "YWIiY1xkCg==", "YWIiY1xkCg", "616222635c640a", "616222635C640A"]);
  expect(formsOf(enc("??>?"))).toEqual(["??>?", "Pz8+Pw==", "Pz8+Pw", "Pz8-Pw", "Pz8-Pw==", "3f3f3e3f", "3F3F3E3F"]);
  const binary = Uint8Array.from([0xff, 0xfe, 0x00, 0x41, 0x80, 0x81, 0x82, 0x83]);
  const forms = formsOf(binary);
  expect(forms).toEqual([Buffer.from(binary).toString("base64"), Buffer.from(binary).toString("base64").replace(/=+$/, ""), Buffer.from(binary).toString("base64url"), `${Buffer.from(binary).toString("base64url")}=`, "fffe004180818283", "FFFE004180818283"]);
  // A view into a larger buffer: only its own bytes.
  const big = enc("xxxxsecret-valueyyyy");
  expect(formsOf(big.subarray(4, 16))[0]).toBe("secret-value");
  // Three bytes: no padding, so the padded forms are the same strings.
  expect(formsOf(enc("a?~"))).toEqual(["a?~", "YT9+", "YT9-", "613f7e", "613F7E"]);
});

test("percent-encoding: any byte escaped or not, hex in either case, a space as + or %20; a byte that must be escaped never matches bare", () => {
  const r = new Redactor();
  r.add("p", enc("a b/c~d#e"));
  for (const form of ["a+b/c~d%23e", "a%20b%2Fc%7Ed%23e", "a%20b%2fc%7ed%23e", "%61%20%62%2F%63%7E%64%23%65", "a+b%2Fc~d%23e"]) expect(r.text(`<${form}>`)).toBe("<[REDACTED:p]>");
  // '#' is not left bare by any encoder: the raw form matches, a bare '#' in a percent form does not.
  expect(r.text("a+b/c~d#e")).toBe("a+b/c~d#e");
  expect(r.text("a%20b/c~d#e")).toBe("a%20b/c~d#e");
  expect(r.text("a b/c~d#e")).toBe("[REDACTED:p]");
  // Not a space: '+' stands for a space only.
  const q = new Redactor();
  q.add("q", enc("plus+plus"));
  expect(q.text("plus%2Bplus plus+plus plus%2bplus")).toBe("[REDACTED:q] [REDACTED:q] [REDACTED:q]");
  expect(q.text("plus plus")).toBe("plus plus");
  // Several secrets: each percent form named by its own secret.
  const two = new Redactor();
  two.add("one", enc("first value"));
  two.add("two", enc("second value"));
  expect(two.text("second+value first%20value")).toBe("[REDACTED:two] [REDACTED:one]");
  // Without '%' or '+' the percent pattern never runs, and text is left as it is.
  expect(two.text("first_value")).toBe("first_value");
});

test("a stream holds back exactly the tail that could begin a form: percent escapes cut anywhere, and nothing more", () => {
  const r = new Redactor();
  r.add("p", enc("to ken/12"));
  const cases: [string, string][] = [
    ["x to%2", "x "],
    ["x to%", "x "],
    ["x to+ke", "x "],
    ["x to%20ken%2F1", "x "],
    ["x to%2G", "x to%2G"],
    ["x to%3", "x to%3"],
    ["x to%", "x "],
    ["x %", "x "],
    ["x t", "x "],
    ["x tx", "x tx"],
    ["x to ken/12", "x [REDACTED:p]"],
    ["plain", "plain"],
  ];
  for (const [chunk, out] of cases) {
    const s = r.stream();
    expect({ chunk, out: s.push(chunk) }).toEqual({ chunk, out });
    expect(s.push("")).toBe("");
    expect(s.end()).toBe(r.text(chunk.slice(out === chunk ? chunk.length : out.length)) || "");
  }
  // A held tail that the next chunk completes, as a percent form.
  const s = r.stream();
  expect(s.push("x to%2") + s.push("0ken%2f12 y") + s.end()).toBe("x [REDACTED:p] y");
  // heldTail counts at most one less than the longest form.
  expect(r.heldTail("to ken/1")).toBe(8);
  expect(r.heldTail("zzto ken/12")).toBe(0);
  expect(r.heldTail("")).toBe(0);
  expect(new Redactor().heldTail("to ken")).toBe(0);
});

test("a redactor with nothing known passes text and values through untouched, and streams hold nothing", () => {
  const r = new Redactor();
  expect(r.active).toBe(false);
  const value = { a: ["[x]"] };
  expect(r.value(value)).toBe(value);
  expect(r.text("anything")).toBe("anything");
  const s = r.stream();
  expect(s.push("to ken")).toBe("to ken");
  expect(s.end()).toBe("");
  r.add("t", enc("to ken/12"));
  expect(r.active).toBe(true);
  expect(r.text("")).toBe("");
});

test("a name given a second value knows both; the same value again changes nothing", () => {
  const r = new Redactor();
  r.add("t", enc("first-secret"));
  r.add("t", enc("second-secret"));
  r.add("t", enc("first-secret"));
  expect(r.text("first-secret second-secret")).toBe("[REDACTED:t] [REDACTED:t]");
  // Two names for one value: the first name given.
  r.add("u", enc("first-secret"));
  expect(r.text("first-secret")).toBe("[REDACTED:t]");
});

test("values: arrays and objects copied only where something changed; keys redacted; other values as they are", () => {
  const r = new Redactor();
  r.add("t", enc("secret-value"));
  const untouched = [1, "a", null, true, { b: [2] }];
  expect(r.value(untouched)).toBe(untouched);
  const mixed = { keep: { k: 1 }, list: [{ k: 2 }, "secret-value", 3], "secret-value": 1 };
  const out = r.value(mixed) as Record<string, unknown>;
  expect(out).toEqual({ keep: { k: 1 }, list: [{ k: 2 }, "[REDACTED:t]", 3], "[REDACTED:t]": 1 });
  expect(out.keep).toBe(mixed.keep);
  expect((out.list as unknown[])[0]).toBe(mixed.list[0]);
  expect(r.value("secret-value")).toBe("[REDACTED:t]");
  expect(r.value(42)).toBe(42);
  expect(r.value(null)).toBeNull();
  // A key that is __proto__ stays an own key of the copy.
  const parsed = JSON.parse('{"__proto__":{"x":"secret-value"}}');
  const red = r.value(parsed) as Record<string, unknown>;
  expect(Object.getPrototypeOf(red)).toBe(Object.prototype);
  expect(Object.getOwnPropertyDescriptor(red, "__proto__")?.value).toEqual({ x: "[REDACTED:t]" });
});

test("forms: none for an empty value; a byte under 0x10 escaped with its leading zero", () => {
  expect(formsOf(new Uint8Array(0))).toEqual([]);
  const r = new Redactor();
  r.add("nl", enc("line\nbreak-x"));
  expect(r.text("<line%0Abreak-x>")).toBe("<[REDACTED:nl]>");
  expect(r.text("<line%0abreak-x>")).toBe("<[REDACTED:nl]>");
  expect(r.text("<line%Abreak-x>")).toBe("<line%Abreak-x>");
});

test("a '+' stands for a space only, and a byte that must be escaped is never bare in a percent form, whole or as a held tail", () => {
  const r = new Redactor();
  r.add("p", enc("a b/c~d#e"));
  expect(r.text("a+b/c~d+e")).toBe("a+b/c~d+e");
  expect(r.text("a+b/c~d%2Be")).toBe("a+b/c~d%2Be");
  const held = (text: string) => {
    const s = r.stream();
    return s.push(text);
  };
  expect(held("x a+b/c~d#")).toBe("x a+b/c~d#"); // '#' bare: no percent form goes on from here
  expect(held("x a+b/c~d%2")).toBe("x ");
  expect(held("x a+b/c~d%21")).toBe("x a+b/c~d%21"); // %21 is '!', not '#'
  expect(held("x a+b/c~d%2G")).toBe("x a+b/c~d%2G");
  expect(held("x a+")).toBe("x ");
  const t = new Redactor();
  t.add("t", enc("to ken/12"));
  expect(t.stream().push("x t+")).toBe("x t+"); // '+' for 'o': no
  // A byte under 0x10 in the value, and a text whose escape is not two hex digits: not a start.
  const c = new Redactor();
  c.add("c", enc("ab\x02cdefgh"));
  expect(c.stream().push("x ab%2 ")).toBe("x ab%2 ");
  expect(c.stream().push("x ab%02")).toBe("x ");
});

test("one secret the start of another: the longer is matched whole, whichever was known first", () => {
  const r = new Redactor();
  r.add("short", enc("tok3n-123"));
  r.add("long", enc("tok3n-123-more-bytes"));
  expect(r.text("<tok3n-123-more-bytes> <tok3n-123>")).toBe("<[REDACTED:long]> <[REDACTED:short]>");
});

test("overlapping matches are named by the longest, the first when as long; percent and raw forms in any order", () => {
  const later = new Redactor();
  later.add("long", enc("12345678abcd"));
  later.add("short", enc("abcdefgh"));
  expect(later.text("x12345678abcdefghy")).toBe("x[REDACTED:long]y");
  const even = new Redactor();
  even.add("first", enc("12345678"));
  even.add("second", enc("5678abcd"));
  expect(even.text("x12345678abcdy")).toBe("x[REDACTED:first]y");
  const r = new Redactor();
  r.add("p", enc("a b/c~d#e"));
  expect(r.text("1 a+b%2Fc~d%23e 2 a b/c~d#e 3 a%20b/c~d%23e 4")).toBe("1 [REDACTED:p] 2 [REDACTED:p] 3 [REDACTED:p] 4");
});

test("a fully percent-escaped value (three times its length) split anywhere in a stream is held whole", () => {
  const r = new Redactor();
  const value = "to ken/12";
  r.add("p", enc(value));
  const form = [...enc(value)].map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join("");
  for (let i = 1; i < form.length; i++) {
    const s = r.stream();
    expect({ i, out: s.push(`a ${form.slice(0, i)}`) + s.push(`${form.slice(i)} b`) + s.end() }).toEqual({ i, out: "a [REDACTED:p] b" });
  }
});

test("a redacted object's properties can be set again; a deep value whose redacted JSON no longer parses is that text", () => {
  const r = new Redactor();
  r.add("t", enc("secret-value"));
  const out = r.value({ "secret-value": 1, b: "secret-value" }) as Record<string, unknown>;
  out.b = "other";
  out["[REDACTED:t]"] = 2;
  expect(out).toEqual({ "[REDACTED:t]": 2, b: "other" });
  expect(Object.keys(out)).toEqual(["[REDACTED:t]", "b"]);
  delete out.b;
  expect(out).toEqual({ "[REDACTED:t]": 2 });
  const q = new Redactor();
  q.add("q", enc('cdefgh"]'));
  const deep = (n: number, inner: unknown) => Array.from({ length: n }).reduce<unknown>((v) => ({ a: v }), inner);
  const broken = JSON.stringify(q.value(deep(300, ["ab", "cdefgh"])));
  expect(broken).not.toContain("cdefgh");
  expect(broken).toContain("[REDACTED:q]");
});

test("percent forms of bytes over 0x7f: either case in both hex digits", () => {
  const r = new Redactor();
  r.add("e", enc("café-token"));
  for (const form of ["caf%C3%A9-token", "caf%c3%a9-token", "caf%C3%a9-token", "caf%c3%A9-token"]) expect(r.text(`<${form}>`)).toBe("<[REDACTED:e]>");
});

test("held tails: a raw space is no '+' stand-in for another character; a whole value of plain characters goes out at once", () => {
  const r = new Redactor();
  r.add("p", enc("to ken/12"));
  expect(r.stream().push("x to_k")).toBe("x to_k");
  const plain = new Redactor();
  plain.add("plain", enc("plain-token1"));
  expect(plain.stream().push("x plain-token1")).toBe("x [REDACTED:plain]");
});

test("two secrets side by side: two markers; a key alone redacted still makes a copy; a stream pushed to after its end starts empty", () => {
  const r = new Redactor();
  r.add("a", enc("AAAAAAAA"));
  r.add("b", enc("BBBBBBBB"));
  expect(r.text("xAAAAAAAABBBBBBBBy")).toBe("x[REDACTED:a][REDACTED:b]y");
  const keyOnly: Record<string, number> = { AAAAAAAA: 1 };
  expect(r.value(keyOnly)).toEqual({ "[REDACTED:a]": 1 });
  const s = r.stream();
  expect(s.push("x AAAA")).toBe("x ");
  expect(s.end()).toBe("AAAA");
  expect(s.push("y") + s.end()).toBe("y");
});
