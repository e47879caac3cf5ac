/**
 * The public header compiles cleanly wherever a plugin author may include it, and its host table
 * has the layout the shim builds.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
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

test("the host table is 48 bytes on this platform, its fields where the shim puts them", () => {
  using dir = tempDir();
  const source = join(dir.path, "layout.c");
  writeFileSync(
    source,
    `#include <stddef.h>
#include <stdio.h>
#include "cxagent_plugin.h"
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu %zu\\n", sizeof(cxagent_host), offsetof(cxagent_host, contract), offsetof(cxagent_host, progress),
         offsetof(cxagent_host, log), offsetof(cxagent_host, stream), offsetof(cxagent_host, current_call), offsetof(cxagent_host, register_child));
  return 0;
}
`,
  );
  const exe = join(dir.path, "layout");
  expect(Bun.spawnSync(["cc", "-I", join(ROOT, "ffi"), "-o", exe, source]).exitCode).toBe(0);
  expect(Bun.spawnSync([exe]).stdout.toString()).toBe("48 4 8 16 24 32 40\n");
});
