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
  return allDifferences(sidecar, described, sides, 1)[0] ?? null;
}

/**
 * Every difference, in the order firstDifference reports the first (`cxagent check` shows them
 * all, so one build fixes them all); at most `limit`.
 */
export function allDifferences(sidecar: Manifest, described: Manifest, sides: Sides = SIDECAR_AND_DESCRIBE, limit = Infinity): string[] {
  const { expected, actual } = sides;
  const found: string[] = [];
  const add = (difference: string) => found.length < limit && found.push(difference);
  const top = ["pluginContract", "name", "version", "instructions", "spawns", "client", "secrets", "sandbox"] as const;
  for (const key of top) {
    if (!sameJson(sidecar[key], described[key])) {
      add(`${expected} declares ${key}=${show(sidecar[key])}, ${actual} returned ${key}=${show(described[key])}`);
    }
  }
  const names = (m: Manifest) => m.tools.map((t) => t.name);
  const onlySidecar = names(sidecar).filter((n) => !names(described).includes(n));
  const onlyDescribed = names(described).filter((n) => !names(sidecar).includes(n));
  for (const name of onlySidecar) add(`tool '${name}' is in ${expected} but ${actual} did not return it`);
  for (const name of onlyDescribed) add(`tool '${name}' was returned by ${actual} but is not in ${expected}`);
  // With a tool missing on either side, the first difference is that; all of them go on.
  if (found.length >= limit) return found;
  for (const tool of sidecar.tools) {
    const other = described.tools.find((t) => t.name === tool.name);
    if (!other) continue;
    for (const key of ["description", "gated", "alwaysAskable", "inputSchema", "title", "annotations", "outputSchema"] as const) {
      if (!sameJson(tool[key], other[key])) {
        add(`tool '${tool.name}': ${expected} declares ${key}=${show(tool[key])}, ${actual} returned ${key}=${show(other[key])}`);
      }
    }
  }
  if (!sameJson(sidecar.commands, described.commands)) {
    const a = sidecar.commands.map((c) => c.name);
    const b = described.commands.map((c) => c.name);
    for (const name of a.filter((n) => !b.includes(n))) add(`command '${name}' is in ${expected} but ${actual} did not return it`);
    for (const name of b.filter((n) => !a.includes(n))) add(`command '${name}' was returned by ${actual} but is not in ${expected}`);
    const sameSet = a.length === b.length && a.every((n) => b.includes(n));
    for (const [i, command] of sidecar.commands.entries()) {
      const j = b.indexOf(command.name);
      if (j < 0) continue;
      const other = described.commands[j]!;
      if (!sameJson(command, other)) add(`command '${command.name}' differs: ${expected} declares ${show(command)}, ${actual} returned ${show(other)}`);
      else if (sameSet && j !== i) add(`command '${command.name}' is number ${i + 1} in ${expected} but number ${j + 1} in what ${actual} returned`);
    }
  }
  return found;
}
