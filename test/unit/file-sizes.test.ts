/** No source file of src/ runs over 400 lines: a file that grows past it is split by what it owns. */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");
const LIMIT = 400;

function files(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(folder, e.name)) : e.name.endsWith(".ts") ? [join(folder, e.name)] : []));
}

test(`no file under src/ is above ${LIMIT} lines`, () => {
  const long = files(SRC)
    .map((file) => ({ file: `src/${relative(SRC, file)}`, lines: readFileSync(file, "utf8").replace(/\n$/, "").split("\n").length }))
    .filter((f) => f.lines > LIMIT);
  expect(long).toEqual([]);
});
