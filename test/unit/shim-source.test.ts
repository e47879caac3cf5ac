/**
 * Which shim a plugin host run from a checkout loads: the built one only while it is no older
 * than any part of its source (src/shim-source.ts). The parent looks and names it on the host's
 * command line (session/host-command.ts), so the host need not load node:fs to look itself.
 */
import { expect, test } from "bun:test";
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHIM_OPTION } from "../../src/protocol/host-args.ts";
import { hostCommand } from "../../src/session/host-command.ts";
import { builtShimIsFresh, joinShim, SHIM_BUILT } from "../../src/shim-source.ts";
import { tempDir } from "../helpers.ts";

function layout(dir: string, times: { built?: number; parts: Record<string, number> }) {
  mkdirSync(join(dir, "shim"));
  for (const [name, at] of Object.entries(times.parts)) {
    writeFileSync(join(dir, "shim", name), "/* part */\n");
    utimesSync(join(dir, "shim", name), at, at);
  }
  if (times.built !== undefined) {
    writeFileSync(join(dir, "built.so"), "");
    utimesSync(join(dir, "built.so"), times.built, times.built);
  }
  return { built: join(dir, "built.so"), parts: join(dir, "shim") };
}

test("the built shim is fresh when no part is newer; a newer part, a newer part that is not C, or no build", () => {
  using a = tempDir();
  const fresh = layout(a.path, { built: 2000, parts: { "00-a.c": 1000, "10-b.c": 2000 } });
  expect(builtShimIsFresh(fresh.built, fresh.parts)).toBe(true);
  using b = tempDir();
  const stale = layout(b.path, { built: 2000, parts: { "00-a.c": 1000, "10-b.c": 3000 } });
  expect(builtShimIsFresh(stale.built, stale.parts)).toBe(false);
  using c = tempDir();
  const notC = layout(c.path, { built: 2000, parts: { "00-a.c": 1000, "README.md": 3000 } });
  expect(builtShimIsFresh(notC.built, notC.parts)).toBe(true);
  using d = tempDir();
  const none = layout(d.path, { parts: { "00-a.c": 1000 } });
  expect(builtShimIsFresh(none.built, none.parts)).toBe(false);
});

test("from a checkout, the host command names the built shim while it is fresh (the test run built it)", () => {
  expect(builtShimIsFresh()).toBe(true);
  const command = hostCommand();
  expect(command.at(-2)).toBe("__host");
  expect(command.at(-1)).toBe(`${SHIM_OPTION}${SHIM_BUILT}`);
});

// A plugin thread may fork and exec at any moment; a file the shim has open then (a /proc file it
// reads, its thread's name it writes) must not pass to that program. Every open says so.
test("every file the shim opens is opened close-on-exec", () => {
  const opens = [...joinShim().matchAll(/\bx_open\(([^;]*)\);/g)].map((m) => m[1]!);
  expect(opens.length).toBeGreaterThan(2);
  expect(opens.filter((args) => !args.includes("SHIM_O_CLOEXEC"))).toEqual([]);
});
