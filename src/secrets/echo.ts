/**
 * No echo back (issue 40): a call whose arguments hold a redaction marker is refused before its
 * gate and its plugin. The model saw `[REDACTED:name]` where a secret was, and sending the marker
 * back (to write it into a config, a ticket, a password field) would store the marker as if it
 * were the value.
 */
import { CxError } from "../errors.ts";
import { MARKER_PREFIX } from "./redact.ts";

/** The path of the first string (or key) in `value` that holds the marker, or null. */
export function markerAt(value: unknown, path = "", depth = 0): string | null {
  if (typeof value === "string") return value.includes(MARKER_PREFIX) ? path || "(the whole argument)" : null;
  if (value === null || typeof value !== "object") return null;
  // Deeper than any argument is read: found in its JSON text, not walked (never passed unseen).
  if (depth > 256) return JSON.stringify(value).includes(MARKER_PREFIX) ? `${path} (nested below it)` : null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const at = markerAt(item, `${path}[${i}]`, depth + 1);
      if (at !== null) return at;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const here = path ? `${path}.${key}` : key;
    if (key.includes(MARKER_PREFIX)) return `${here} (its key)`;
    const at = markerAt(item, here, depth + 1);
    if (at !== null) return at;
  }
  return null;
}

/** Throws E_REDACTED_ECHO when `args` hold a redaction marker (`what`: "calc_add" or "command 'x'"). */
export function refuseEchoedMarker(plugin: string, what: string, args: unknown): void {
  const at = markerAt(args);
  if (at === null) return;
  throw new CxError("E_REDACTED_ECHO", `the arguments of plugin '${plugin}' ${what} hold a redaction marker (${MARKER_PREFIX}…]) at ${at}: the model sent back a value cxagent redacted, not the value; the call was not made`, {
    hint: "a secret is shown to the model only as its marker; have the plugin read the secret itself (context.secret / host->secret) instead of taking it as an argument",
    details: { plugin, at },
  });
}
