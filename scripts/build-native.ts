#!/usr/bin/env bun
/**
 * Builds the native parts with the system C compiler:
 *   - ffi/build/cxagent_shim.so, the plugin host's shim (libc-free, so it loads anywhere);
 *   - ffi/build/cxagent-sandbox.bin, the sandbox launcher (static and libc-free; src/sandbox/native-launcher.ts);
 *   - examples/<name>/<name>.so beside each example's sidecar: from <name>.c with the C compiler,
 *     or, for a Rust example (a Cargo.toml in its folder), with cargo when it is on PATH. cargo
 *     builds into target/ at the repository root, and the library is copied next to the sidecar
 *     under the sidecar's stem — or, for a Cortex plugin (a manifest.toml in its folder), to where
 *     its [native] library says; without cargo the Rust examples are skipped, saying so;
 *   - in an example folder, each lib<x>.c first, as lib<x>.so with soname lib<x>.so, and the
 *     plugin linked against them with RUNPATH $ORIGIN: the way a plugin ships what it needs;
 *   - with "all": every test fixture, test/fixtures/<name>.c, into test/fixtures/build/<name>/,
 *     a folder of its own holding the library and its sidecar; the fixtures of
 *     test/fixtures/deps/, plugins that need a library of their own, linked three ways; and the
 *     Cortex native plugins of test/fixtures/cortex/, each alone in its folder (no sidecar).
 *
 * Usage: bun scripts/build-native.ts [shim|examples|all]. Only what changed is rebuilt.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { buildCrate, findCargo } from "./_cargo.ts";
import { builtShimIsFresh, joinShim } from "../src/shim-source.ts";
import { parseCortexManifest } from "../src/discovery/cortex.ts";

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

/** `libs` go after the inputs, where the linker looks for what the inputs need. */
function compile(output: string, inputs: string[], flags: string[], depends: string[] = [], libs: string[] = []) {
  if (newer(output, [...inputs, ...depends, import.meta.path])) return;
  mkdirSync(join(output, ".."), { recursive: true });
  const cmd = [cc, ...flags, "-o", output, ...inputs, ...libs];
  const proc = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (proc.exitCode !== 0) {
    console.error(`build-native: failed: ${cmd.join(" ")}`);
    process.exit(1);
  }
  built++;
}

// The shim: its parts (ffi/shim/*.c) joined into one file, which the binary embeds too. No libc at
// link time (the host hands it libc's entry points), no stack protector (it would need libc's
// __stack_chk_fail), and no builtins gcc could turn into memcpy calls.
const shimSource = join(root, "ffi/build/cxagent_shim.c");
const joined = joinShim(join(root, "ffi/shim"));
mkdirSync(join(root, "ffi/build"), { recursive: true });
if (!existsSync(shimSource) || readFileSync(shimSource, "utf8") !== joined) writeFileSync(shimSource, joined);
compile(join(root, "ffi/build/cxagent_shim.so"), [shimSource], [
  "-shared", "-fPIC", "-O2", ...WARN, "-nostdlib", "-fno-builtin", "-fno-tree-loop-distribute-patterns",
  "-fno-stack-protector", "-fvisibility=hidden",
]);
// A part touched but not changed (a checkout, a stash) leaves the joined source and the library as
// they were, and the library older than that part. It is still what the parts say: mark it so, or
// plugin hosts run from this checkout would compile the source with TinyCC (src/shim-source.ts).
const shimLibrary = join(root, "ffi/build/cxagent_shim.so");
if (!builtShimIsFresh(shimLibrary, join(root, "ffi/shim"))) utimesSync(shimLibrary, new Date(), new Date());
// The sandbox launcher (ffi/launcher/sandbox-launcher.c): a static executable with no libc at all
// (its own _start and system calls), which the binary embeds and a checkout runs as it is.
compile(join(root, "ffi/build/cxagent-sandbox.bin"), [join(root, "ffi/launcher/sandbox-launcher.c")], [
  "-static", "-nostdlib", "-no-pie", "-O2", ...WARN, "-fno-builtin", "-fno-tree-loop-distribute-patterns",
  "-fno-stack-protector", "-fno-asynchronous-unwind-tables",
]);
// The shim's copy of the host table against the public header: a mismatch fails the build.
compile(join(root, "ffi/build/check-layout.o"), ["ffi/check-layout.c"], ["-c", "-std=c11", ...WARN, "-I", "ffi"], [
  join(root, "ffi/cxagent_plugin.h"),
  join(root, "ffi/shim/10-host-table.c"),
]);

for (const name of what === "shim" ? [] : readdirSync(join(root, "examples")).sort()) {
  if (existsSync(join(root, "examples", name, "Cargo.toml"))) {
    buildRustExample(name);
    continue;
  }
  const folder = join(root, "examples", name);
  const source = join(folder, `${name}.c`);
  if (!existsSync(source)) continue;
  // Libraries the plugin ships: each needed by its soname, found through $ORIGIN.
  const shipped = readdirSync(folder).filter((f) => /^lib.+\.c$/.test(f)).sort().map((f) => basename(f, ".c"));
  for (const lib of shipped) {
    compile(join(folder, `${lib}.so`), [join(folder, `${lib}.c`)], ["-shared", "-fPIC", "-O2", ...WARN, `-Wl,-soname,${lib}.so`]);
  }
  const linked = shipped.length ? [`-L${folder}`, ...shipped.map((l) => `-l${l.slice(3)}`), "-Wl,-rpath,$ORIGIN"] : [];
  compile(join(folder, `${name}.so`), [source], ["-shared", "-fPIC", "-O2", ...WARN, "-I", "ffi", "-pthread"], [
    join(root, "ffi/cxagent_plugin.h"),
    ...shipped.map((l) => join(folder, `${l}.so`)),
  ], linked);
}

if (what === "all") {
  const dir = join(root, "test/fixtures");
  const header = join(dir, "fx.h");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".c")).sort()) {
    const name = basename(file, ".c");
    const out = join(dir, "build", name);
    const sidecar = join(dir, `${name}.plugin.json`);
    buildFixture(name, join(dir, file), existsSync(sidecar) ? readFileSync(sidecar, "utf8") : defaultManifest(name), out, header);
  }
  buildDependencyFixtures(join(dir, "deps"), join(dir, "build"), header);
  // Cortex native plugins (cortex_plugin_init): no sidecar, no fx.h; the ABI is in each file.
  for (const file of readdirSync(join(dir, "cortex")).filter((f) => f.endsWith(".c")).sort()) {
    const name = basename(file, ".c");
    compile(join(dir, "build", name, `${name}.so`), [join(dir, "cortex", file)], ["-shared", "-fPIC", "-O1", "-g", ...WARN, "-Wno-unused-parameter", "-pthread"]);
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
  // A Cortex plugin (a manifest.toml beside Cargo.toml) goes where its [native] library says.
  const manifest = join(dir, "manifest.toml");
  const output = existsSync(manifest) ? (parseCortexManifest(readFileSync(manifest), manifest).library ?? join(dir, `${name}.so`)) : join(dir, `${name}.so`);
  mkdirSync(dirname(output), { recursive: true });
  // Copied only when the bytes differ, so an unchanged build leaves the load set as it was.
  if (existsSync(output) && readFileSync(output).equals(readFileSync(build.library))) return;
  copyFileSync(build.library, output);
  built++;
}

/** One fixture plugin: the sidecar (the single source of its manifest, as FX_MANIFEST) and the library. */
function buildFixture(name: string, source: string, manifest: string, out: string, header: string, link: string[] = [], depends: string[] = []) {
  mkdirSync(out, { recursive: true });
  const manifestHeader = join(out, "manifest.h");
  // Non-ASCII as JSON escapes, so the C source stays ASCII (a bidi control would trip -Wbidi-chars).
  const ascii = JSON.stringify(JSON.parse(manifest)).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const define = `#define FX_MANIFEST ${JSON.stringify(ascii)}\n`;
  if (!existsSync(manifestHeader) || readFileSync(manifestHeader, "utf8") !== define) writeFileSync(manifestHeader, define);
  const sidecarOut = join(out, `${name}.plugin.json`);
  if (!existsSync(sidecarOut) || readFileSync(sidecarOut, "utf8") !== manifest) writeFileSync(sidecarOut, manifest);
  compile(join(out, `${name}.so`), [source], [
    "-shared", "-fPIC", "-O1", "-g", ...WARN, "-Wno-unused-parameter", "-I", "ffi", "-I", join(root, "test/fixtures"), "-include", manifestHeader, "-pthread",
  ], [header, manifestHeader, join(root, "ffi/cxagent_plugin.h"), ...depends], link);
}

/**
 * Plugins that need a library, libgreeting.so (deps/greeting.c), each in build/<name>/:
 *   with-dependency            the library beside it, soname set, RUNPATH $ORIGIN: the right way;
 *   outside-rpath              the library in build/outside-lib/, found through an absolute RPATH;
 *   dependency-without-soname  the library beside it, RUNPATH $ORIGIN, but no soname;
 * and two that need only a system library (libgcc_s.so.1), built from echo.c:
 *   system-dependency          found in the loader's cache, as usual;
 *   stale-rpath                with an absolute RPATH to a folder outside (that does not exist);
 * and one, from echo.c too, that needs only what the plugin host has loaded (libc.so.6), so the
 * loader never searches its absolute RPATH:
 *   rpath-host-only
 * Plus build/greeting-swapped/libgreeting.so, a look-alike with other text, to swap in.
 */
function buildDependencyFixtures(deps: string, build: string, header: string) {
  const greeting = join(deps, "greeting.c");
  const lib = (out: string, flags: string[]) => {
    compile(join(out, "libgreeting.so"), [greeting], ["-shared", "-fPIC", "-O1", ...WARN, ...flags]);
    return join(out, "libgreeting.so");
  };
  const plugin = join(deps, "with-dependency.c");
  const sidecar = (name: string) => readFileSync(join(deps, `${name}.plugin.json`), "utf8");
  const own = lib(join(build, "with-dependency"), ["-Wl,-soname,libgreeting.so"]);
  buildFixture("with-dependency", plugin, sidecar("with-dependency"), join(build, "with-dependency"), header, [`-L${join(build, "with-dependency")}`, "-lgreeting", "-Wl,-rpath,$ORIGIN"], [own]);
  lib(join(build, "greeting-swapped"), ["-Wl,-soname,libgreeting.so", '-DGREETING="swapped"']);
  const outside = lib(join(build, "outside-lib"), ["-Wl,-soname,libgreeting.so", '-DGREETING="outside"']);
  buildFixture("outside-rpath", plugin, sidecar("outside-rpath"), join(build, "outside-rpath"), header, [`-L${join(build, "outside-lib")}`, "-lgreeting", "-Wl,--disable-new-dtags", `-Wl,-rpath,${join(build, "outside-lib")}`], [outside]);
  const echo = join(deps, "..", "echo.c");
  const gcc = ["-Wl,--no-as-needed", "-l:libgcc_s.so.1"];
  buildFixture("system-dependency", echo, sidecar("system-dependency"), join(build, "system-dependency"), header, gcc);
  buildFixture("stale-rpath", echo, sidecar("stale-rpath"), join(build, "stale-rpath"), header, ["-Wl,--disable-new-dtags", `-Wl,-rpath,${join(build, "stale-rpath-folder")}`, ...gcc]);
  buildFixture("rpath-host-only", echo, sidecar("rpath-host-only"), join(build, "rpath-host-only"), header, ["-Wl,--disable-new-dtags", `-Wl,-rpath,${join(build, "stale-rpath-folder")}`]);
  const bare = lib(join(build, "dependency-without-soname"), []);
  buildFixture("dependency-without-soname", plugin, sidecar("dependency-without-soname"), join(build, "dependency-without-soname"), header, [`-L${join(build, "dependency-without-soname")}`, "-lgreeting", "-Wl,-rpath,$ORIGIN"], [bare]);
}

function defaultManifest(name: string): string {
  const tool = name.replace(/[^A-Za-z0-9_]/g, "_");
  return JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools: [{ name: tool, description: `the ${name} fixture` }] }, null, 2) + "\n";
}
