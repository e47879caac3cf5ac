#!/usr/bin/env bun
/**
 * Builds the native parts with the system C compiler:
 *   - ffi/build/cxagent_shim.so, the plugin host's shim (libc-free, so it loads anywhere);
 *   - examples/<name>/<name>.so beside each example's sidecar: from <name>.c with the C compiler,
 *     or, for a Rust example (a Cargo.toml in its folder), with cargo when it is on PATH. cargo
 *     builds into target/ at the repository root, and the library is copied next to the sidecar
 *     under the sidecar's stem; without cargo the Rust examples are skipped, saying so;
 *   - with "all": every test fixture, test/fixtures/<name>.c, into test/fixtures/build/<name>/,
 *     a folder of its own holding the library and its sidecar.
 *
 * Usage: bun scripts/build-native.ts [shim|examples|all]. Only what changed is rebuilt.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { buildCrate, findCargo } from "./_cargo.ts";

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
  if (existsSync(join(root, "examples", name, "Cargo.toml"))) {
    buildRustExample(name);
    continue;
  }
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

/**
 * A Rust example: cargo builds it into <root>/target (never inside the example's folder, which is
 * its load set), and the library is copied beside the sidecar as <name>.so, so that the sidecar
 * <name>.plugin.json is "<library stem>.plugin.json" (cargo itself would name it lib<name>.so).
 */
function buildRustExample(name: string) {
  const dir = join(root, "examples", name);
  if (!findCargo()) {
    console.error(`build-native: skipped examples/${name}, a Rust example: cargo is not on PATH (install Rust from https://rustup.rs to build it)`);
    return;
  }
  const build = buildCrate(dir, join(root, "target"), { inherit: true });
  if (!build.ok) {
    console.error(`build-native: failed: cargo build --release --offline in examples/${name}`);
    process.exit(1);
  }
  const output = join(dir, `${name}.so`);
  // Copied only when the bytes differ, so an unchanged build leaves the load set as it was.
  if (existsSync(output) && readFileSync(output).equals(readFileSync(build.library))) return;
  copyFileSync(build.library, output);
  built++;
}

function defaultManifest(name: string): string {
  const tool = name.replace(/[^A-Za-z0-9_]/g, "_");
  return JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools: [{ name: tool, description: `the ${name} fixture` }] }, null, 2) + "\n";
}
