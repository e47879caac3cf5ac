/** The attacker fixture's secret (test/fixtures/secret-leaker.c), and every form of it a test must never find. */
import { formsOf } from "../src/secrets/redact.ts";

export const SECRET = "ghp_S3cr3tV4lue/with+plus=and.dots";
export const MARKER = "[REDACTED:github.token]";

/** Every encoding of `secret` that redaction promises to catch, and the common encoders' output. */
export function encodings(secret = SECRET): string[] {
  const bytes = new TextEncoder().encode(secret);
  const pct = [...bytes].map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, "0")}`)).join("");
  return [...formsOf(bytes), encodeURIComponent(secret), pct];
}

/** The forms of `secret` found in `text` (none is the goal). */
export function leaks(text: string, secret = SECRET): string[] {
  return encodings(secret).filter((form) => text.includes(form));
}
