/**
 * Redaction's worst values (issues 40 and 41's finishing): a secret inside another, a value cut
 * into three stream chunks, regular-expression metacharacters, base64 with other padding. No byte
 * of a secret's form may come out, however the text is cut.
 */
import { expect, test } from "bun:test";
import { Redactor } from "../../src/secrets/redact.ts";

const enc = (text: string) => new TextEncoder().encode(text);
const B64 = (text: string) => Buffer.from(text).toString("base64");
const B64URL = (text: string) => Buffer.from(text).toString("base64url");

/** Every way of cutting `text` into `parts` pieces (parts 2 or 3), pushed through a fresh stream. */
function everyCut(r: Redactor, text: string, parts: 2 | 3, check: (out: string, cuts: number[]) => void) {
  for (let i = 1; i < text.length; i++) {
    if (parts === 2) {
      const s = r.stream();
      check(s.push(text.slice(0, i)) + s.push(text.slice(i)) + s.end(), [i]);
      continue;
    }
    for (let j = i + 1; j < text.length; j++) {
      const s = r.stream();
      check(s.push(text.slice(0, i)) + s.push(text.slice(i, j)) + s.push(text.slice(j)) + s.end(), [i, j]);
    }
  }
}

test("a secret that is part of another: the longer one is redacted whole, in text and in any stream, and no byte of it leaks", () => {
  const r = new Redactor();
  const outer = "pre fix-abcdefgh12-suffix";
  const inner = "abcdefgh12";
  r.add("inner", enc(inner));
  r.add("outer", enc(outer));
  for (const form of [outer, encodeURIComponent(outer), B64(outer), Buffer.from(outer).toString("hex")]) {
    expect(r.text(`<${form}>`)).toBe("<[REDACTED:outer]>");
    everyCut(r, `<${form}>`, 2, (out, cuts) => expect({ out, cuts }).toEqual({ out: "<[REDACTED:outer]>", cuts }));
  }
  expect(r.text(`<${inner}>`)).toBe("<[REDACTED:inner]>");
  everyCut(r, `<${inner} ${outer}>`, 2, (out, cuts) => expect({ out, cuts }).toEqual({ out: "<[REDACTED:inner] [REDACTED:outer]>", cuts }));
});

test("two secrets that overlap in the text: neither leaves a byte behind", () => {
  const r = new Redactor();
  r.add("a", enc("12345678"));
  r.add("b", enc("5678abcdefgh"));
  const text = "x12345678abcdefghy";
  // One marker for the two, named by the longer match.
  expect(r.text(text)).toBe("x[REDACTED:b]y");
  everyCut(r, text, 2, (out, cuts) => expect({ out, cuts }).toEqual({ out: "x[REDACTED:b]y", cuts }));
  everyCut(r, text, 3, (out, cuts) => expect({ out, cuts }).toEqual({ out: "x[REDACTED:b]y", cuts }));
});

test("a value cut into three stream chunks, in every form and at every pair of cuts, comes out as the marker alone", () => {
  const r = new Redactor();
  const value = "t0ken with space/+&\"";
  r.add("t", enc(value));
  for (const form of [value, JSON.stringify(value).slice(1, -1), B64(value), B64URL(value), Buffer.from(value).toString("hex").toUpperCase(), encodeURIComponent(value)]) {
    everyCut(r, `a ${form} b`, 3, (out, cuts) => expect({ out, cuts }).toEqual({ out: "a [REDACTED:t] b", cuts }));
  }
});

test("a value full of regular-expression metacharacters is matched as text, and only where it is", () => {
  const r = new Redactor();
  const value = String.raw`a.b*c?d(e)[f]{g}|h^i$j\k+l-m/n`;
  r.add("meta", enc(value));
  for (const form of [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), B64(value), Buffer.from(value).toString("hex")]) {
    expect(r.text(`<${form}>`)).toBe("<[REDACTED:meta]>");
  }
  // What the value would match were it a pattern is left alone.
  const lookAlike = "aXbbbcd(e)ffgh^i$j\\k+l-m/n";
  expect(r.text(lookAlike)).toBe(lookAlike);
  expect(r.text("abcdefghijklmn")).toBe("abcdefghijklmn");
  everyCut(r, `<${value}>`, 2, (out, cuts) => expect({ out, cuts }).toEqual({ out: "<[REDACTED:meta]>", cuts }));
});

test("base64 with any padding (two, one, none, percent-encoded; standard or URL-safe) is redacted; what is left beside the marker is padding only", () => {
  const r = new Redactor();
  for (const value of ["len-10-abc", "len-11-abcd", "len-12-abcde"]) r.add(value.slice(0, 6), enc(value)); // lengths 1, 2 and 0 mod 3
  for (const value of ["len-10-abc", "len-11-abcd", "len-12-abcde"]) {
    const name = value.slice(0, 6);
    for (const b of [B64(value), B64URL(value)]) {
      const bare = b.replace(/=+$/, "");
      for (const pad of ["", "=", "==", "%3D%3D"]) {
        const out = r.text(`k=${bare}${pad};`);
        expect(out).toMatch(new RegExp(`^k=\\[REDACTED:${name}\\](=|%3D)*;$`));
        const s = r.stream();
        const cut = 2 + bare.length - 1;
        expect(s.push(`k=${bare}${pad};`.slice(0, cut)) + s.push(`k=${bare}${pad};`.slice(cut)) + s.end()).toBe(out);
      }
    }
  }
});

test("a value nested deeper than the walk goes (300 levels) is redacted as its JSON text, in strings and keys; a clean one is returned as it is", () => {
  const r = new Redactor();
  r.add("t", enc("hunter2hunter2"));
  const deep = (n: number, inner: unknown) => Array.from({ length: n }).reduce<unknown>((v, _, i) => (i % 2 ? [v] : { a: v }), inner);
  const out = r.value(deep(300, { s: "x hunter2hunter2 y", ["key hunter2hunter2"]: B64("hunter2hunter2") }));
  expect(JSON.stringify(out)).not.toContain("hunter2");
  expect(JSON.stringify(out)).not.toContain(B64("hunter2hunter2"));
  expect(JSON.stringify(out)).toContain(`{"s":"x [REDACTED:t] y","key [REDACTED:t]":"[REDACTED:t]"}`);
  const clean = deep(300, { s: "nothing here" });
  expect(r.value(clean)).toBe(clean);
  // A value whose JSON the secret spans across (a quote inside it): the JSON text, redacted, in its place.
  const q = new Redactor();
  q.add("q", enc('ab","cdefgh'));
  const spanning = q.value(deep(300, ["ab", "cdefgh"]));
  expect(JSON.stringify(spanning)).not.toContain("cdefgh");
});
