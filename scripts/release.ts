#!/usr/bin/env bun
/**
 * `npm run release`: what a release publishes, in dist/:
 *   cxagent                 the single executable (scripts/compile.ts)
 *   cxagent.sha256          its SHA-256, in the format `sha256sum -c` reads
 *   cxagent-<version>.tgz   the npm package (`npm pack`, which builds types/ first: prepack)
 * The tarball does not carry the executable: installed with npm, the command runs the source with
 * the Bun the `bun` dependency brings (bin/cxagent).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = join(import.meta.dir, "..");
const dist = join(root, "dist");
const run = (cmd: string[]) => {
  const proc = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (proc.exitCode !== 0) {
    console.error(`release: failed: ${cmd.join(" ")}`);
    process.exit(proc.exitCode ?? 1);
  }
};

mkdirSync(dist, { recursive: true });
run([process.execPath, "scripts/compile.ts"]);
const digest = createHash("sha256").update(readFileSync(join(dist, "cxagent"))).digest("hex");
writeFileSync(join(dist, "cxagent.sha256"), `${digest}  cxagent\n`);
run(["npm", "pack", "--pack-destination", dist, "--silent"]);
const tarball = `cxagent-${pkg.version}.tgz`;
console.error(`release: dist/cxagent (sha256 ${digest}), dist/cxagent.sha256, dist/${tarball}`);
