/**
 * References as arguments (issue 41): a string argument, at any depth, that is exactly
 * `cxref:sha256-<hex>` is replaced by the text stored under it before the arguments are checked
 * against the tool's schema and before the gate sees them, so a large result goes from one tool
 * to the next without passing through the caller. An unknown, expired or untrusted reference
 * refuses the call by name (the store's error). What was replaced is told to the permission
 * prompt: each reference's size and the plugin and tool that produced it.
 */
import { type ResultInfo, type ResultStore, refHex, REF_PREFIX } from "./store.ts";

/** A reference given as an argument: where (a JSON path), and what the store says of it. */
export interface GivenReference extends ResultInfo {
  at: string;
}

/** `args` with every reference replaced (copied where it changed), and the references it held. */
export function substituteRefs(args: unknown, store: ResultStore): { args: unknown; references: GivenReference[] } {
  const references: GivenReference[] = [];
  const walk = (value: unknown, at: string): unknown => {
    if (typeof value === "string") {
      if (!value.startsWith(REF_PREFIX) || refHex(value) === null) return value;
      const { bytes, info } = store.read(value);
      references.push({ ...info, at });
      return bytes.toString("utf8");
    }
    if (Array.isArray(value)) {
      let copy: unknown[] | null = null;
      value.forEach((item, i) => {
        const next = walk(item, `${at}[${i}]`);
        if (next !== item) (copy ??= [...value])[i] = next;
      });
      return copy ?? value;
    }
    if (value !== null && typeof value === "object") {
      let copy: Record<string, unknown> | null = null;
      for (const [key, item] of Object.entries(value)) {
        const next = walk(item, `${at}.${key}`);
        if (next !== item) (copy ??= { ...(value as Record<string, unknown>) })[key] = next;
      }
      return copy ?? value;
    }
    return value;
  };
  const replaced = walk(args, "arguments");
  return { args: replaced, references };
}

/** One line per reference, for the permission prompt. */
export function referenceLines(references: readonly GivenReference[]): string {
  return references
    .map((r) => `${r.at} is ${r.ref}: ${r.bytes} bytes${r.plugin ? ` from plugin '${r.plugin}', tool ${r.tool ?? "?"}` : " of unknown origin"}`)
    .join("\n");
}
