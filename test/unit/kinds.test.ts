/**
 * A plugin's kind is chosen once, when its location is inspected (session/inspect.ts): everything
 * after asks the kind's profile (src/kinds/), and nothing outside those modules compares a kind's
 * name. A kind the registry lacks fails to compile (Record<PluginKind, KindProfile>).
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { profileOf } from "../../src/kinds/index.ts";
import { PLUGIN_KINDS } from "../../src/protocol/host-args.ts";

const SRC = join(import.meta.dir, "..", "..", "src");
const KINDS = PLUGIN_KINDS.join("|");
/** `x.kind === "cortex"`, `"module" !== kind`, `case "native":`: a branch on a kind's name. */
const BRANCH = new RegExp(
  [`kind\\s*[!=]==?\\s*["'](${KINDS})["']`, `["'](${KINDS})["']\\s*[!=]==?\\s*[\\w.?]*kind\\b`, `case\\s+["'](native|cortex)["']\\s*:`, `kind\\s*[!=]==?\\s*DEFAULT_KIND`].join("|"),
  "i",
);

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(folder, e.name)) : e.name.endsWith(".ts") ? [join(folder, e.name)] : [],
  );
}

test("no file outside src/kinds/ branches on a kind's name", () => {
  const branches: string[] = [];
  for (const file of sources(SRC)) {
    const path = relative(SRC, file);
    if (path.startsWith("kinds/")) continue;
    // The wire form, not a branch: the host's command line leaves the default kind off.
    if (path === "protocol/host-args.ts") continue;
    readFileSync(file, "utf8").split("\n").forEach((line, i) => {
      if (BRANCH.test(line)) branches.push(`src/${path}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(branches).toEqual([]);
});

test("the check sees a branch where there is one", () => {
  expect(BRANCH.test(`if (location.kind === "cortex") x();`)).toBe(true);
  expect(BRANCH.test(`const y = "module" !== spec.kind;`)).toBe(true);
  expect(BRANCH.test(`    case "native":`)).toBe(true);
  expect(BRANCH.test(`if (type === "module") return false;`)).toBe(false);
  expect(BRANCH.test(`if (location.kind === DEFAULT_KIND) x();`)).toBe(true);
});

test("every kind has a profile named for it, and an unnamed kind is a native one", () => {
  for (const kind of PLUGIN_KINDS) expect(profileOf(kind).kind).toBe(kind);
  expect(profileOf(undefined).kind).toBe("native");
});
