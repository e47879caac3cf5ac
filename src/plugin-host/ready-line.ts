/**
 * The startup line every kind of plugin host writes once its plugin is loaded. The manifest in it
 * comes from the plugin (its describe, or a Cortex plugin's descriptors): a line past the line cap
 * would be dropped by the parent, which would then wait for it until its startup deadline, so such
 * a manifest is refused at once, by its size.
 */
import { LINE_CAP } from "../protocol/wire.ts";

/** The line as text (newline included), or the size it would have had when that is past the cap. */
export function readyLine(value: { ready: true; manifest: unknown } & Record<string, unknown>): { text: string } | { tooLong: number } {
  const text = JSON.stringify(value) + "\n";
  const size = Buffer.byteLength(text);
  return size > LINE_CAP ? { tooLong: size } : { text };
}

/** What the refusal says: the size, and the cap. */
export function tooLongText(what: string, size: number): string {
  return `${what} is ${size} bytes on the startup line, more than one protocol line holds (${LINE_CAP} bytes)`;
}
