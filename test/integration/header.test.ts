/**
 * The public header compiles cleanly wherever a plugin author may include it, and its host table
 * has the layout the shim builds.
 */
import { expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, tempDir } from "../helpers.ts";

const HEADER = join(ROOT, "ffi/cxagent_plugin.h");

test.each([
  ["cc", "c", "-std=c99"],
  ["cc", "c", "-std=c11"],
  ["c++", "c++", "-std=c++11"],
  ["c++", "c++", "-std=c++20"],
])("%s -x %s %s -pedantic: no warnings", (compiler, language, standard) => {
  const r = Bun.spawnSync([compiler, "-x", language, standard, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", HEADER]);
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
});

test("the host table is 56 bytes on this platform (secret appended after register_child), its fields where the shim puts them", () => {
  using dir = tempDir();
  const source = join(dir.path, "layout.c");
  writeFileSync(
    source,
    `#include <stddef.h>
#include <stdio.h>
#include "cxagent_plugin.h"
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu %zu %zu\\n", sizeof(cxagent_host), offsetof(cxagent_host, contract), offsetof(cxagent_host, progress),
         offsetof(cxagent_host, log), offsetof(cxagent_host, stream), offsetof(cxagent_host, current_call), offsetof(cxagent_host, register_child), offsetof(cxagent_host, secret));
  return 0;
}
`,
  );
  const exe = join(dir.path, "layout");
  expect(Bun.spawnSync(["cc", "-I", join(ROOT, "ffi"), "-o", exe, source]).exitCode).toBe(0);
  expect(Bun.spawnSync([exe]).stdout.toString()).toBe("56 4 8 16 24 32 40 48\n");
});

test("the shim's copy of the host table is held to the header at build time: a moved field stops the build", () => {
  using dir = tempDir();
  // A copy of ffi/ holding the check, the header and the table under test (quoted includes are
  // looked up beside the including file first).
  const check = (table: string) => {
    mkdirSync(join(dir.path, "shim"), { recursive: true });
    copyFileSync(join(ROOT, "ffi/check-layout.c"), join(dir.path, "check-layout.c"));
    copyFileSync(HEADER, join(dir.path, "cxagent_plugin.h"));
    writeFileSync(join(dir.path, "shim", "10-host-table.c"), table);
    return Bun.spawnSync(["cc", "-c", "-std=c11", "-o", join(dir.path, "out.o"), join(dir.path, "check-layout.c")]);
  };
  const table = readFileSync(join(ROOT, "ffi/shim/10-host-table.c"), "utf8");
  expect(check(table).exitCode).toBe(0);
  // log and stream swapped: same size, other places
  const swapped = table.replace(
    /( *void \(\*log\)\([^\n]*\n)( *void \(\*stream\)\([^\n]*\n)/,
    (_m, log: string, stream: string) => stream + log,
  );
  expect(swapped).not.toBe(table);
  const r = check(swapped);
  expect(r.exitCode).not.toBe(0);
  expect(r.stderr.toString()).toContain("ffi/shim/10-host-table.c puts log elsewhere than ffi/cxagent_plugin.h");
});
