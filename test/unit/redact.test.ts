import { expect, test } from "bun:test";
import { formsOf, Redactor } from "../../src/secrets/redact.ts";

const SECRET = "s3cr3t/t0ken+with space&\"quote";
const bytes = new TextEncoder().encode(SECRET);
const b = Buffer.from(bytes);
const M = "[REDACTED:github.token]";

function redactor(): Redactor {
  const r = new Redactor();
  r.add("github.token", bytes);
  return r;
}

test("every form of the value becomes the marker: raw, JSON-escaped, base64 ×4, hex ×2, percent-encodings", () => {
  const r = redactor();
  const encodings = [
    SECRET,
    JSON.stringify(SECRET).slice(1, -1),
    b.toString("base64"),
    b.toString("base64").replace(/=+$/, ""),
    b.toString("base64url"),
    b.toString("hex"),
    b.toString("hex").toUpperCase(),
    encodeURIComponent(SECRET),
    encodeURIComponent(SECRET).toLowerCase().replace(/%([0-9a-f]{2})/g, (m) => m.toLowerCase()),
    encodeURI(SECRET),
    new URLSearchParams({ t: SECRET }).toString().slice(2),
    [...bytes].map((x) => `%${x.toString(16).padStart(2, "0")}`).join(""),
    [...bytes].map((x) => `%${x.toString(16).padStart(2, "0").toUpperCase()}`).join(""),
  ];
  for (const form of encodings) {
    const out = r.text(`before ${form} after`);
    expect(out).toBe(`before ${M} after`);
  }
  // base64url with padding: only when the value's length is not a multiple of 3
  expect(formsOf(bytes)).toContain(b.toString("base64url") + "=".repeat((3 - (bytes.length % 3)) % 3));
});

test("look-alikes and other text are left exactly as they are", () => {
  const r = redactor();
  const text = "https://bucket.s3.amazonaws.com/x?X-Amz-Signature=abcdef0123456789&s3cr3t/t0ken+with space";
  expect(r.text(text)).toBe(text);
  expect(new Redactor().text(SECRET)).toBe(SECRET);
});

test("strings anywhere in a JSON value are redacted, keys too; an untouched value is returned as is", () => {
  const r = redactor();
  const value = { output: { content: `x${SECRET}`, structuredContent: { [SECRET]: [1, b.toString("hex")] } as Record<string, unknown> }, n: 1 };
  expect(r.value(value)).toEqual({ output: { content: `x${M}`, structuredContent: { [M]: [1, M] } }, n: 1 });
  const plain = { a: ["b"] };
  expect(r.value(plain)).toBe(plain);
});

test("a value split across stream chunks is redacted whole, in every form; the held tail comes out at the end", () => {
  const r = redactor();
  for (const form of [SECRET, b.toString("base64"), b.toString("hex"), encodeURIComponent(SECRET)]) {
    for (let cut = 1; cut < form.length; cut++) {
      const s = r.stream();
      const out = s.push(`a ${form.slice(0, cut)}`) + s.push(`${form.slice(cut)} b`) + s.end();
      expect(out).toBe(`a ${M} b`);
    }
  }
  const s = r.stream();
  expect(s.push("hello ")).toBe("hello ");
  expect(s.push("s3c")).toBe("");
  expect(s.push("ond")).toBe("s3cond");
  expect(s.push("s3cr")).toBe("");
  expect(s.end()).toBe("s3cr");
});

test("a secret known only after a stream began is redacted from then on", () => {
  const r = new Redactor();
  const s = r.stream();
  expect(s.push("nothing yet ")).toBe("nothing yet ");
  r.add("db", new TextEncoder().encode("hunter2hunter2"));
  expect(s.push("hunter2hun") + s.push("ter2!") + s.end()).toBe("[REDACTED:db]!");
});
