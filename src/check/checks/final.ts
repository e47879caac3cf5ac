/**
 * What every plugin host of the run saw, judged once they have all stopped: whether each returned
 * string was a fresh heap allocation and cxagent_plugin_free really released it, and whether the
 * processes the plugin started were declared and registered.
 */
import type { CheckContext } from "../context.ts";
import { fail, pass, plural, quote, skip, type Verdict, warn } from "../report.ts";

const WHERE_WORDS: Record<string, string> = {
  "plugin-read-only": "in the library's read-only data (a string literal?)",
  "plugin-writable": "in the library's own writable data (a static buffer?)",
  library: "in another library's memory (a C library's static buffer, such as strerror's?)",
  stack: "on the calling thread's stack (a local buffer?)",
  lent: "inside a buffer the host lent the call (its own tool_name, input_json or invocation_json)",
};

/** The function that returned it, and the one that frees it: a Cortex plugin's events name both (ffi/shim/97-check-cortex.c). */
export const returnedBy = (e: { export?: string; free?: string }) => (e.free ? e.export! : `cxagent_plugin_${e.export}`);
const freedBy = (e: { free?: string } | undefined) => e?.free ?? "cxagent_plugin_free";
/** What it returned: a cxagent plugin returns strings, a Cortex plugin buffers. */
const things = (e: { free?: string } | undefined) => (e?.free ? "buffer" : "string");

export function checkOwnership(ctx: CheckContext): Verdict {
  const returned = ctx.seen.returned;
  if (returned.length === 0) return skip(ctx.runnable ?? "no export returned a string");
  const wrong = returned.filter((e) => e.where !== "heap");
  // A Cortex buffer returned again once freed is freed-once's (buffers.ts).
  const repeated = returned.filter((e) => e.repeated && e.where === "heap" && !e.free);
  const problems: string[] = [];
  const byKind = new Map<string, typeof wrong>();
  for (const e of wrong) byKind.set(`${e.export}\u0000${e.where}`, [...(byKind.get(`${e.export}\u0000${e.where}`) ?? []), e]);
  for (const [key, events] of byKind) {
    const where = key.split("\u0000")[1];
    problems.push(`${returnedBy(events[0]!)} returned ${plural(events.length, things(events[0]))} ${WHERE_WORDS[where!] ?? where}, e.g. ${quote(events[0]!.preview ?? "", 80)}`);
  }
  if (repeated.length) {
    problems.push(`${plural(repeated.length, "string")} returned again (by ${[...new Set(repeated.map(returnedBy))].join(", ")}) while an earlier return of the same pointer was not yet freed, e.g. ${quote(repeated[0]!.preview ?? "", 80)}`);
  }
  if (problems.length) {
    return fail(`${problems.join("; ")}; the host frees every ${things(wrong[0] ?? repeated[0])} it is given, so each must be one your ${freedBy(wrong[0] ?? repeated[0])} can release (it was not freed here, to keep the host alive)`,
      wrong[0]?.free
        ? "return a fresh allocation every time (malloc in C; a Vec or String turned into ptr, len and cap in Rust), which your buffer_free releases"
        : "return a fresh allocation every time: malloc/strdup in C, CString::into_raw in Rust, C.CString in Go");
  }
  const exports = [...new Set(returned.map(returnedBy))];
  return pass(`all ${plural(returned.length, things(returned[0]))} returned by ${exports.join(", ")} ${returned.length === 1 ? "was a fresh heap allocation" : "were fresh heap allocations"}`);
}

export function checkFree(ctx: CheckContext): Verdict {
  const freed = ctx.seen.returned.filter((e) => e.released !== "skipped");
  if (freed.length === 0) return skip(ctx.seen.returned.length ? "no returned string was heap memory the host could free (see ownership)" : ctx.runnable ?? "no export returned a string");
  const kept = freed.filter((e) => e.released === "no");
  const yes = freed.filter((e) => e.released === "yes").length;
  if (kept.length) {
    return fail(`${freedBy(kept[0])} did not release ${kept.length} of the ${plural(freed.length, things(kept[0]))} it was given (glibc's allocator still had each in use after the call), e.g. from ${returnedBy(kept[0]!)}: ${quote(kept[0]!.preview ?? "", 80)}`,
      "release each pointer with the deallocator of the allocator that made it: free() for malloc, CString::from_raw for CString::into_raw; every call leaks its answer otherwise");
  }
  if (yes === 0) {
    return warn(`whether ${freedBy(freed[0])} releases what it is given could not be told for any of the ${plural(freed.length, "string")} (this looks only into glibc's heap; another C library or allocator hides it)`,
      "nothing to fix if free() (or your allocator's own release) is called on each pointer");
  }
  const unknown = freed.length - yes;
  return pass(`${freedBy(freed[0])} released ${yes === freed.length ? `all ${plural(yes, things(freed[0]))}` : `${yes} of ${plural(freed.length, things(freed[0]))}`} it was given${unknown ? ` (${unknown} could not be told: glibc had merged ${unknown === 1 ? "it" : "them"} with a free neighbour)` : ""}`);
}

/** Processes the plugin started and did not register: seen in a host's subtree, neither registered nor below a registered one. */
function unregistered(ctx: CheckContext) {
  const registered = new Set(ctx.seen.registered.map((r) => `${r.pid}:${r.startTime}`));
  const isRegistered = (p: { pid: number; startTime: string }) => registered.has(`${p.pid}:${p.startTime}`);
  const belowRegistered = (p: { ppid: number }) => {
    for (let parent = ctx.seen.processes.get(p.ppid), hops = 0; parent && hops < 64; parent = ctx.seen.processes.get(parent.ppid), hops++) {
      if (isRegistered(parent)) return true;
    }
    return false;
  };
  return [...ctx.seen.processes.values()].filter((p) => !isRegistered(p) && !belowRegistered(p));
}

function spawnedAnything(ctx: CheckContext): string | null {
  const seen = [...ctx.seen.processes.values()];
  if (seen.length) return `${plural(seen.length, "process", "processes")} (${seen.slice(0, 4).map((p) => `${p.name}, pid ${p.pid}`).join("; ")})`;
  if (ctx.seen.registered.length) return `${plural(ctx.seen.registered.length, "registered process", "registered processes")}`;
  if (ctx.seen.waitedFor.size) return "processes it waited for (system(), popen() or a fork it collected)";
  return null;
}

export function checkSpawns(ctx: CheckContext): Verdict {
  if (!ctx.sidecar) return skip("the sidecar could not be read");
  if (ctx.runnable !== null) return skip(ctx.runnable);
  ctx.sampleAll();
  const spawned = spawnedAnything(ctx);
  if (!ctx.sidecar.spawns && spawned) {
    return fail(`its manifest says spawns: false, but it started ${spawned}; the approval prompt told the user it starts none`,
      "declare \"spawns\": true in the sidecar (and in describe), so a person approving it knows");
  }
  if (ctx.sidecar.spawns && !spawned) return pass("spawns: true is declared; no process was started while the check ran (a tool may start one only on some arguments)");
  return pass(ctx.sidecar.spawns ? `spawns: true is declared, and it started ${spawned}` : "spawns: false is declared, and it started no process");
}

export function checkRegisters(ctx: CheckContext): Verdict {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  ctx.sampleAll();
  const refused = ctx.seen.logs.filter((l) => /^register_child\(.*\) was refused/.test(l.text)).map((l) => l.text);
  const missing = unregistered(ctx);
  const outside = missing.filter((p) => !p.inGroup && !p.zombie);
  const inside = missing.filter((p) => p.inGroup || p.zombie);
  const show = (ps: typeof missing) => ps.slice(0, 4).map((p) => `${p.name}, pid ${p.pid}${p.zombie ? ", ended, never waited for" : ""}`).join("; ");
  if (refused.length || outside.length) {
    const parts = [
      ...refused.map((r) => r.replace(/; nothing was recorded$/, "")),
      ...(outside.length ? [`${plural(outside.length, "process", "processes")} left the plugin host's process group and ${outside.length === 1 ? "was" : "were"} never registered (${show(outside)}): nothing ends ${outside.length === 1 ? "it" : "them"} when the plugin stops or the session is killed`] : []),
    ];
    return fail(parts.join("; "), "call host->register_child(pid) right after starting each process (after fork or posix_spawn returns), and only for your own children");
  }
  if (inside.length) {
    return warn(`${plural(inside.length, "process", "processes")} started and not registered (${show(inside)}); ${inside.length === 1 ? "it stays" : "they stay"} in the plugin host's group, which is ended when the plugin stops, but a registered process is also ended after a crash of everything, from its record`,
      "call host->register_child(pid) right after starting each process");
  }
  const registered = ctx.seen.registered.length;
  if (registered) return pass(`${plural(registered, "process", "processes")} started, each registered right away`);
  if (ctx.seen.waitedFor.size) return pass("it only ran processes it waited for (nothing outlives its call)");
  return pass("it started no process");
}
