/**
 * Sidecar ↔ describe agreement (SPEC §4.2): the two manifests must say the same thing on every
 * point a person approved. Returns the first difference as a sentence, or null.
 */
import type { Manifest } from "../protocol/manifest.ts";

/** Structural equality: object key order and whitespace do not matter, array order does. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => sameJson(x, bb[i]));
  }
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b as object, k) && sameJson((a as never)[k], (b as never)[k]));
}

const show = (value: unknown) => JSON.stringify(value) ?? "undefined";

/** How the two manifests are named in the sentence: by default, the sidecar and describe. */
export interface Sides {
  /** What the first manifest came from, as the subject of "declares". */
  expected: string;
  /** What the second came from, as the subject of "returned". */
  actual: string;
}

const SIDECAR_AND_DESCRIBE: Sides = { expected: "the sidecar", actual: "describe" };

export function firstDifference(sidecar: Manifest, described: Manifest, sides: Sides = SIDECAR_AND_DESCRIBE): string | null {
  const { expected, actual } = sides;
  const top = ["pluginContract", "name", "version", "instructions", "spawns", "client"] as const;
  for (const key of top) {
    if (!sameJson(sidecar[key], described[key])) {
      return `${expected} declares ${key}=${show(sidecar[key])}, ${actual} returned ${key}=${show(described[key])}`;
    }
  }
  const names = (m: Manifest) => m.tools.map((t) => t.name);
  const onlySidecar = names(sidecar).filter((n) => !names(described).includes(n));
  const onlyDescribed = names(described).filter((n) => !names(sidecar).includes(n));
  if (onlySidecar.length) return `tool '${onlySidecar[0]}' is in ${expected} but ${actual} did not return it`;
  if (onlyDescribed.length) return `tool '${onlyDescribed[0]}' was returned by ${actual} but is not in ${expected}`;
  for (const tool of sidecar.tools) {
    const other = described.tools.find((t) => t.name === tool.name)!;
    for (const key of ["description", "gated", "alwaysAskable", "inputSchema"] as const) {
      if (!sameJson(tool[key], other[key])) {
        return `tool '${tool.name}': ${expected} declares ${key}=${show(tool[key])}, ${actual} returned ${key}=${show(other[key])}`;
      }
    }
  }
  if (!sameJson(sidecar.commands, described.commands)) {
    const a = sidecar.commands.map((c) => c.name);
    const b = described.commands.map((c) => c.name);
    const missing = a.find((n) => !b.includes(n));
    const extra = b.find((n) => !a.includes(n));
    if (missing) return `command '${missing}' is in ${expected} but ${actual} did not return it`;
    if (extra) return `command '${extra}' was returned by ${actual} but is not in ${expected}`;
    const changed = sidecar.commands.find((c, i) => !sameJson(c, described.commands[i]));
    return `command '${changed?.name ?? "?"}' differs: ${expected} declares ${show(changed)}, ${actual} returned ${show(described.commands.find((c) => c.name === changed?.name))}`;
  }
  return null;
}
