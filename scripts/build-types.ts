#!/usr/bin/env bun
/**
 * Writes the library's declarations to types/ (package.json "types"): tsc from src/index.ts,
 * declarations only, then every relative import made to name the .js a consumer's NodeNext
 * resolution maps to the .d.ts beside it (tsc keeps the sources' .ts extensions there).
 * Run by `npm run types`, and by npm itself before `npm pack` and `npm publish` (prepack).
 */
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const out = process.argv[2] ?? join(root, "types");
rmSync(out, { recursive: true, force: true });
const tsc = Bun.spawnSync([join(root, "node_modules/.bin/tsc"), "-p", join(root, "tsconfig.types.json"), "--outDir", out], { cwd: root, stdout: "inherit", stderr: "inherit" });
if (tsc.exitCode !== 0) {
  console.error("build-types: tsc failed");
  process.exit(1);
}
const walk = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
for (const file of walk(out).filter((f) => f.endsWith(".d.ts"))) {
  const text = readFileSync(file, "utf8");
  const fixed = text.replace(/((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g, "$1$2.js$3");
  if (fixed !== text) writeFileSync(file, fixed);
}
console.error(`build-types: wrote ${out}`);
