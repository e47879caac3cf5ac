/**
 * What in a sandbox that may only narrow (a project's config entry, a dynamic gate's per-call
 * lease) would allow more than the sandbox it narrows: each entry that widens, by its JSON path
 * inside the sandbox (`fs.read[1]`, `net`, `memoryMiB`), with why. Intersection (intersect.ts)
 * would quietly drop such an entry; a source that may only narrow is refused for it instead, so
 * that nobody believes a path is allowed that is not.
 *
 * `wide` null is unconfined: nothing narrower can widen it. An entry that leaves a limit out
 * narrows nothing there (the other side's limit stays), so only a higher number widens.
 */
import type { SandboxDeclaration, SandboxNet } from "../protocol/sandbox.ts";
import { within } from "./intersect.ts";

export interface Widening {
  /** Its JSON path inside the sandbox: `fs.write[0]`, `net`, `net.connect[1]`, `processes`. */
  at: string;
  message: string;
}

const netWords = (n: SandboxNet) => (typeof n === "string" ? JSON.stringify(n) : `TCP ports ${JSON.stringify(n)}`);

export function wideningsOf(narrow: SandboxDeclaration, wide: SandboxDeclaration | null): Widening[] {
  if (wide === null) return [];
  const out: Widening[] = [];
  const readable = [...wide.fs.read, ...wide.fs.write];
  narrow.fs.read.forEach((p, i) => {
    if (!readable.some((q) => within(p, q))) out.push({ at: `fs.read[${i}]`, message: `${JSON.stringify(p)} lies outside what may be read (${readable.map((q) => JSON.stringify(q)).join(", ") || "nothing"})` });
  });
  narrow.fs.write.forEach((p, i) => {
    if (!wide.fs.write.some((q) => within(p, q))) out.push({ at: `fs.write[${i}]`, message: `${JSON.stringify(p)} lies outside what may be written (${wide.fs.write.map((q) => JSON.stringify(q)).join(", ") || "nothing"})` });
  });
  out.push(...netWidenings(narrow.net, wide.net));
  for (const key of ["processes", "memoryMiB", "openFiles"] as const) {
    const mine = narrow[key];
    const theirs = wide[key];
    if (mine !== undefined && theirs !== undefined && mine > theirs) out.push({ at: key, message: `${mine} is higher than the ${theirs} allowed` });
  }
  return out;
}

function netWidenings(narrow: SandboxNet, wide: SandboxNet): Widening[] {
  if (wide === "any" || narrow === "none") return [];
  if (wide === "none" || narrow === "any") return [{ at: "net", message: `${netWords(narrow)} is wider than the ${netWords(wide)} allowed` }];
  const out: Widening[] = [];
  for (const side of ["connect", "bind"] as const) {
    narrow[side].forEach((p, i) => {
      if (!wide[side].some((q) => q.port === p.port)) out.push({ at: `net.${side}[${i}]`, message: `port ${p.port} is not among the ports allowed to ${side} (${wide[side].map((q) => q.port).join(", ") || "none"})` });
    });
  }
  return out;
}
