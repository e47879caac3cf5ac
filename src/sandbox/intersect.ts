/**
 * The effective sandbox: what a plugin declares, narrowed by what the user's config.json imposes
 * (`plugins.<name>.sandbox`); with one side only, that side. Intersection only ever narrows: a
 * path survives where it lies within a path of the other side (the narrower of the two is kept),
 * the network is the smaller of the two, each limit the lower. Paths are compared as written,
 * placeholders included (`${project}/out` lies within `${project}`), folder by folder.
 */
import type { SandboxDeclaration, SandboxNet } from "../protocol/sandbox.ts";

/** Whether `inner` is `outer` or lies beneath it, folder by folder. */
export function within(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith("/") ? outer : outer + "/");
}

function paths(a: readonly string[], b: readonly string[]): string[] {
  const kept = new Set<string>();
  for (const x of a) for (const y of b) {
    if (within(x, y)) kept.add(x);
    else if (within(y, x)) kept.add(y);
  }
  return [...kept];
}

function net(a: SandboxNet, b: SandboxNet): SandboxNet {
  if (a === "none" || b === "none") return "none";
  if (a === "any") return b;
  if (b === "any") return a;
  const ports = (x: { port: number }[], y: { port: number }[]) => x.filter((p) => y.some((q) => q.port === p.port));
  return { connect: ports(a.connect, b.connect), bind: ports(a.bind, b.bind) };
}

const lower = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

export function intersect(a: SandboxDeclaration, b: SandboxDeclaration): SandboxDeclaration {
  // A read is allowed by the other side's read or write (a write includes reading).
  const read = paths(a.fs.read, [...b.fs.read, ...b.fs.write]).concat(paths(b.fs.read, a.fs.write));
  const out: SandboxDeclaration = { fs: { read: [...new Set(read)], write: paths(a.fs.write, b.fs.write) }, net: net(a.net, b.net) };
  const limits = { processes: lower(a.processes, b.processes), memoryMiB: lower(a.memoryMiB, b.memoryMiB), openFiles: lower(a.openFiles, b.openFiles) };
  for (const [key, value] of Object.entries(limits)) if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

/** Whether `narrow` allows nothing `wide` does not: every path within one of wide's, no wider network, no higher limit. */
export function narrowerOrEqual(narrow: SandboxDeclaration, wide: SandboxDeclaration): boolean {
  const reads = [...wide.fs.read, ...wide.fs.write];
  if (!narrow.fs.read.every((p) => reads.some((q) => within(p, q)))) return false;
  if (!narrow.fs.write.every((p) => wide.fs.write.some((q) => within(p, q)))) return false;
  if (JSON.stringify(net(narrow.net, wide.net)) !== JSON.stringify(narrow.net)) return false;
  for (const key of ["processes", "memoryMiB", "openFiles"] as const) {
    if (wide[key] !== undefined && (narrow[key] === undefined || narrow[key]! > wide[key]!)) return false;
  }
  return true;
}
