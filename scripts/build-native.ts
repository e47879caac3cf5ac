#!/usr/bin/env bun
/**
 * Builds the native parts with the system C compiler:
 *   - ffi/build/cxagent_shim.so, the plugin host's shim (libc-free, so it loads anywhere);
 *   - examples/<name>/<name>.so beside each example's sidecar;
 *   - with "all": every test fixture, test/fixtures/<name>.c, into test/fixtures/build/<name>/,
 *     a folder of its own holding the library and its sidecar.
 *
 * Usage: bun scripts/build-native.ts [shim|examples|all]. Only what changed is rebuilt.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

const root = join(import.meta.dir, "..");
const what = process.argv[2] ?? "examples";
const cc = process.env.CC ?? "cc";
const WARN = ["-Wall", "-Wextra", "-Werror"];

let built = 0;

function newer(output: string, inputs: string[]): boolean {
  if (!existsSync(output)) return false;
  const t = statSync(output).mtimeMs;
  return inputs.every((i) => statSync(i).mtimeMs <= t);
}

function compile(output: string, inputs: string[], flags: string[], depends: string[] = []) {
  if (newer(output, [...inputs, ...depends, import.meta.path])) return;
  mkdirSync(join(output, ".."), { recursive: true });
  const cmd = [cc, ...flags, "-o", output, ...inputs];
  const proc = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (proc.exitCode !== 0) {
    console.error(`build-native: failed: ${cmd.join(" ")}`);
    process.exit(1);
  }
  built++;
}

// The shim: no libc at link time (the host hands it libc's entry points), no stack protector
// (it would need libc's __stack_chk_fail), and no builtins gcc could turn into memcpy calls.
compile(join(root, "ffi/build/cxagent_shim.so"), ["ffi/cxagent_shim.c"], [
  "-shared", "-fPIC", "-O2", ...WARN, "-nostdlib", "-fno-builtin", "-fno-tree-loop-distribute-patterns",
  "-fno-stack-protector", "-fvisibility=hidden",
]);

for (const name of what === "shim" ? [] : readdirSync(join(root, "examples")).sort()) {
  const source = join(root, "examples", name, `${name}.c`);
  if (!existsSync(source)) continue;
  compile(join(root, "examples", name, `${name}.so`), [source], ["-shared", "-fPIC", "-O2", ...WARN, "-I", "ffi", "-pthread"], [
    join(root, "ffi/cxagent_plugin.h"),
  ]);
}

if (what === "all") {
  const dir = join(root, "test/fixtures");
  const header = join(dir, "fx.h");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".c")).sort()) {
    const name = basename(file, ".c");
    const out = join(dir, "build", name);
    const sidecar = join(dir, `${name}.plugin.json`);
    mkdirSync(out, { recursive: true });
    // The sidecar is the single source of the fixture's manifest: its text becomes FX_MANIFEST.
    const manifestHeader = join(out, "manifest.h");
    const manifest = existsSync(sidecar) ? readFileSync(sidecar, "utf8") : defaultManifest(name);
    const define = `#define FX_MANIFEST ${JSON.stringify(JSON.stringify(JSON.parse(manifest)))}\n`;
    if (!existsSync(manifestHeader) || readFileSync(manifestHeader, "utf8") !== define) writeFileSync(manifestHeader, define);
    const sidecarOut = join(out, `${name}.plugin.json`);
    if (!existsSync(sidecarOut) || readFileSync(sidecarOut, "utf8") !== manifest) writeFileSync(sidecarOut, manifest);
    compile(join(out, `${name}.so`), [join(dir, file)], [
      "-shared", "-fPIC", "-O1", "-g", ...WARN, "-Wno-unused-parameter", "-I", "ffi", "-I", dir, "-include", manifestHeader, "-pthread",
    ], [header, manifestHeader, join(root, "ffi/cxagent_plugin.h")]);
  }
  // Fixtures that are not plugins at all.
  const junk = join(dir, "build", "not-a-library");
  mkdirSync(junk, { recursive: true });
  if (!existsSync(join(junk, "not-a-library.so"))) writeFileSync(join(junk, "not-a-library.so"), "this is a text file, not an ELF shared object\n");
  writeFileSync(join(junk, "not-a-library.plugin.json"), defaultManifest("not-a-library"));
}

console.error(`build-native: ${built ? `built ${built} librar${built === 1 ? "y" : "ies"}` : "everything up to date"}`);

function defaultManifest(name: string): string {
  const tool = name.replace(/[^A-Za-z0-9_]/g, "_");
  return JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools: [{ name: tool, description: `the ${name} fixture` }] }, null, 2) + "\n";
}
