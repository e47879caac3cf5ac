/**
 * The edges of the dependency plan (src/trust/dependencies.ts), each on libraries compiled here:
 * a folder beside the plugin's whose name begins with the plugin folder's name is outside it;
 * `$ORIGIN/..` is refused even where it would lead back inside; two shipped libraries with one
 * soname are refused, while one library needed twice is not.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, realpathSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { CxError } from "../../src/errors.ts";
import { planDependencies } from "../../src/trust/dependencies.ts";
import { systemLoader } from "../../src/trust/loader.ts";
import { tempDir } from "../helpers.ts";

const cc = process.env.CC ?? "cc";

/** Compiles a shared library from one line of C; `flags` are the linker's (soname, rpath, needed). */
function library(path: string, flags: string[] = []): string {
  mkdirSync(join(path, ".."), { recursive: true });
  const source = `${path}.c`;
  writeFileSync(source, `int ${path.replace(/\W/g, "_")}_marker(void) { return 1; }\n`);
  const r = Bun.spawnSync([cc, "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", path, source, ...flags], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cc} failed: ${r.stderr.toString()}`);
  return path;
}

/** The plan for `lib` in `folder`, as the load pipeline asks for it: every file of the folder kept (or those `kept` says). */
function plan(folder: string, lib: string, options: { env?: Record<string, string>; cwd?: string; kept?: (rel: string) => boolean } = {}) {
  const realFolder = realpathSync(folder);
  return planDependencies({
    library: lib,
    realFolder,
    bytesOf: (rel) => {
      if (options.kept && !options.kept(rel)) return undefined;
      try {
        return readFileSync(join(realFolder, rel));
      } catch {
        return undefined;
      }
    },
    env: options.env ?? {},
    cwd: options.cwd ?? folder,
  });
}

function refusal(fn: () => unknown): CxError {
  try {
    fn();
  } catch (error) {
    if (error instanceof CxError) return error;
    throw error;
  }
  throw new Error("it was not refused");
}

describe("the dependency plan's edges", () => {
  test("a library in a sibling folder whose name begins with the plugin folder's is outside the folder", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const evil = join(dir.path, "plugin-evil");
    library(join(evil, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${evil}`, "-ldep", "-Wl,--enable-new-dtags", `-Wl,-rpath,${evil}`]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(
      `${lib} needs libdep.so, which the loader would load from ${join(evil, "libdep.so")}: outside the plugin's folder ${realpathSync(folder)} and not a system library, so it could change after you approve the plugin`,
    );
    expect(error.hint).toBe(`ship libdep.so inside the plugin's folder and link plugin.so with -Wl,-rpath,'$ORIGIN'; see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h`);
    expect(error.details).toEqual({ library: lib, dependency: "libdep.so", path: join(evil, "libdep.so") });
    // the library itself in the sibling folder, planned as the plugin folder's
    const outside = library(join(evil, "other.so"));
    expect(refusal(() => plan(folder, outside)).message).toBe(`the library ${outside} is not inside its own folder ${realpathSync(folder)}`);
  });

  test.each([
    ["DT_RUNPATH", "--enable-new-dtags", "$ORIGIN/.."],
    ["DT_RPATH", "--disable-new-dtags", "$ORIGIN/.."],
    ["DT_RUNPATH", "--enable-new-dtags", "$ORIGIN/../plugin"],
    ["DT_RUNPATH", "--enable-new-dtags", "$ORIGIN/sub/../.."],
    ["DT_RUNPATH", "--enable-new-dtags", "$ORIGIN/12"],
    ["DT_RUNPATH", "--enable-new-dtags", "$ORIGIN//3/lib"],
  ])("%s %s %s is refused, though the library it needs is in the plugin's folder", (source, dtags, path) => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-ldep", `-Wl,${dtags}`, `-Wl,-rpath,${path}`]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(`${lib} has '${path}' in its ${source}; cxagent accepts '$ORIGIN' and folders below it, without '..' or a numeric first folder`);
    expect(error.hint).toBe("ship what it needs inside the plugin's folder; see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h");
  });

  test("libraries that need each other in a cycle are refused, naming the chain", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const dtags = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    library(join(folder, "liba.so"), ["-Wl,-soname,liba.so"]);
    library(join(folder, "libb.so"), ["-Wl,-soname,libb.so", `-L${folder}`, "-la", ...dtags]);
    library(join(folder, "liba.so"), ["-Wl,-soname,liba.so", `-L${folder}`, "-lb", ...dtags]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-la", ...dtags]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe("the plugin's libraries need each other in a cycle (plugin.so → liba.so → libb.so → liba.so), which cxagent cannot load from approved copies");
    expect(error.hint).toBe("break the cycle: a library the plugin ships must not need, directly or not, a library that needs it");
    expect(error.details).toEqual({ library: join(folder, "libb.so"), dependency: "liba.so" });
  });

  test("a shipped library needed by its path, not its name, is refused", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const dep = library(join(folder, "libdep.so"));
    const lib = library(join(folder, "plugin.so"), [dep]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(`${lib} needs the plugin's own libdep.so by its path ('${dep}'), so the loader would open it again from disk instead of the approved copy`);
    expect(error.hint).toBe("link it by name with -Wl,-rpath,'$ORIGIN' instead of by path; see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h");
    expect(error.details).toEqual({ library: lib, dependency: dep });
  });

  test("a library found nowhere is refused, naming every place searched in the loader's order", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "libgone.so"), ["-Wl,-soname,libgone.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-lgone", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"]);
    rmSync(join(folder, "libgone.so"));
    const error = refusal(() => plan(folder, lib));
    const searched = [join(realpathSync(folder), "lib"), "the loader's cache", ...systemLoader().defaultDirs].join(", ");
    expect(error.message).toBe(`${lib} needs libgone.so, which the loader would find nowhere (searched: ${searched})`);
    expect(error.hint).toBe("ship libgone.so inside the plugin's folder and link plugin.so with -Wl,-rpath,'$ORIGIN'; see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h");
    expect(error.details).toEqual({ library: lib, dependency: "libgone.so" });
  });

  test("$ORIGIN and a folder below it are accepted", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "lib", "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${join(folder, "lib")}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"]);
    expect(plan(folder, lib).inSet).toEqual([{ path: "lib/libdep.so", soname: "libdep.so" }]);
  });

  test("two shipped libraries with one soname are refused; one library needed by two is not", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    // libx.so beside the plugin, and another libx.so in sub/, which libother.so finds first
    library(join(folder, "libx.so"), ["-Wl,-soname,libx.so"]);
    library(join(folder, "sub", "libx.so"), ["-Wl,-soname,libx.so"]);
    library(join(folder, "libother.so"), ["-Wl,-soname,libother.so", `-L${join(folder, "sub")}`, "-lx", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/sub"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-lx", "-lother", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    const twice = refusal(() => plan(folder, lib));
    expect(twice.message).toBe("two of the plugin's libraries, libx.so and sub/libx.so, both have the soname 'libx.so'; the loader would use only the first");
    expect(twice.hint).toBe("give each library the plugin ships a soname of its own");
    // the same libx.so needed by both: one library, planned once
    const shared = join(dir.path, "shared");
    library(join(shared, "libx.so"), ["-Wl,-soname,libx.so"]);
    library(join(shared, "libother.so"), ["-Wl,-soname,libother.so", `-L${shared}`, "-lx", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    const ok = library(join(shared, "plugin.so"), [`-L${shared}`, "-lx", "-lother", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    expect(plan(shared, ok).inSet).toEqual([
      { path: "libx.so", soname: "libx.so" },
      { path: "libother.so", soname: "libother.so" },
    ]);
    expect(relative(shared, ok)).toBe("plugin.so");
  });
});

const SHIPPING = "see 'Shipping libraries your plugin needs' in ffi/cxagent_plugin.h";
/** A system library the host has not loaded (it links only libc, libm, libdl, libpthread and ld.so): the loader's cache knows it. */
const GCC = "libgcc_s.so.1";
const gccPath = () => {
  const path = systemLoader().cached(GCC, process.arch === "arm64" ? 183 : 62);
  if (path === null) throw new Error(`the loader's cache has no ${GCC}: these tests need gcc's runtime library`);
  return path;
};

describe("where the plan searches, and what it refuses there", () => {
  test.each([
    ["DT_RPATH", "--disable-new-dtags"],
    ["DT_RUNPATH", "--enable-new-dtags"],
  ])("%s naming folders outside by path, searched before the system's, is refused even where they hold nothing: the first is named", (source, dtags) => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const outside = join(dir.path, "outside");
    const gone = join(dir.path, "gone");
    mkdirSync(outside, { recursive: true });
    const lib = library(join(folder, "plugin.so"), ["-lgcc_s", `-Wl,${dtags}`, `-Wl,-rpath,${outside}:${gone}`]);
    const error = refusal(() => plan(folder, lib));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toBe(
      `${lib} has the loader look for ${GCC} in ${outside} (its ${source}) before the system's folders: a folder it names by path, not through $ORIGIN, and not a system folder, so a file put there after you approve the plugin would run`,
    );
    expect(error.hint).toBe(`relink plugin.so with only '$ORIGIN' paths in its ${source} (for example -Wl,-rpath,'$ORIGIN'), or ship ${GCC} in the plugin's folder; ${SHIPPING}`);
    expect(error.details).toEqual({ library: lib, dependency: GCC, path: outside });
    // a folder that does not exist is no system folder either
    const first = library(join(folder, "first.so"), ["-lgcc_s", `-Wl,${dtags}`, `-Wl,-rpath,${gone}:${outside}`]);
    expect(refusal(() => plan(folder, first)).details).toEqual({ library: first, dependency: GCC, path: gone });
  });

  test("folders through $ORIGIN, a system folder by path and LD_LIBRARY_PATH's are no risk: the system library is allowed", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const outside = join(dir.path, "outside");
    mkdirSync(outside, { recursive: true });
    const systemDir = systemLoader().defaultDirs.find((d) => existsSync(d) && !existsSync(join(d, GCC)));
    if (systemDir === undefined) throw new Error(`every default folder of the loader holds ${GCC}: this test needs one that does not`);
    const lib = library(join(folder, "plugin.so"), ["-lgcc_s", "-Wl,--disable-new-dtags", `-Wl,-rpath,$ORIGIN/lib:\${ORIGIN}/more:${systemDir}`]);
    const expected = [
      { name: GCC, path: gccPath() },
      { name: "libc.so.6", path: "(already loaded by the plugin host)" },
    ];
    expect(plan(folder, lib).system).toEqual(expected);
    expect(plan(folder, lib, { env: { LD_LIBRARY_PATH: outside } }).system).toEqual(expected);
  });

  test.each([
    ["DT_RPATH", "--disable-new-dtags"],
    ["DT_RUNPATH", "--enable-new-dtags"],
  ])("a library found nowhere names the folders searched in the loader's order, %s", (source, dtags) => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const work = join(dir.path, "work");
    mkdirSync(work, { recursive: true });
    library(join(folder, "libgone.so"), ["-Wl,-soname,libgone.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-lgone", `-Wl,${dtags}`, "-Wl,-rpath,$ORIGIN/r1"]);
    rmSync(join(folder, "libgone.so"));
    const env = { LD_LIBRARY_PATH: "l1;/abs/l2:" };
    const fromEnv = [join(work, "l1"), "/abs/l2", work];
    const fromPlugin = [join(folder, "r1")];
    const defaults = ["the loader's cache", ...systemLoader().defaultDirs];
    const searched = source === "DT_RPATH" ? [...fromPlugin, ...fromEnv, ...defaults] : [...fromEnv, ...fromPlugin, ...defaults];
    expect(refusal(() => plan(folder, lib, { env, cwd: work })).message).toBe(`${lib} needs libgone.so, which the loader would find nowhere (searched: ${searched.join(", ")})`);
    // an empty LD_LIBRARY_PATH names no folder (not the working one)
    expect(refusal(() => plan(folder, lib, { env: { LD_LIBRARY_PATH: "" }, cwd: work })).message).toBe(
      `${lib} needs libgone.so, which the loader would find nowhere (searched: ${[...fromPlugin, ...defaults].join(", ")})`,
    );
  });

  test("with DF_1_NODEFLIB the loader's cache and default folders are not searched: a system library is then found nowhere", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const lib = library(join(folder, "plugin.so"), ["-lgcc_s", "-Wl,-z,nodefaultlib"]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(`${lib} needs ${GCC}, which the loader would find nowhere (searched: no folder)`);
    expect(error.hint).toBe(`ship ${GCC} inside the plugin's folder and link plugin.so with -Wl,-rpath,'$ORIGIN'; ${SHIPPING}`);
  });

  test("a file in a default folder that the cache does not list is a system library", () => {
    using dir = tempDir();
    const name = "os-release"; // every systemd-era distribution has /usr/lib/os-release; no cache lists it
    const expected = systemLoader().defaultDirs.map((d) => join(d, name)).find((p) => existsSync(p));
    if (expected === undefined) throw new Error(`no default folder of the loader holds ${name}: this test needs one file there`);
    expect(systemLoader().cached(name, process.arch === "arm64" ? 183 : 62)).toBeNull();
    const folder = join(dir.path, "plugin");
    const stubs = join(dir.path, "stubs");
    library(join(stubs, "libstub.so"), [`-Wl,-soname,${name}`]);
    const lib = library(join(folder, "plugin.so"), [`-L${stubs}`, "-lstub"]);
    expect(plan(folder, lib).system).toEqual([
      { name, path: expected },
      { name: "libc.so.6", path: "(already loaded by the plugin host)" },
    ]);
  });

  test("a shipped library whose DT_SONAME is another name is refused, naming both", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    library(join(folder, "libdep.so"), ["-Wl,-soname,libother.so"]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(
      `${lib} needs libdep.so, found in the plugin's folder as libdep.so, but that library's DT_SONAME is 'libother.so'; the loader matches the approved copy by its soname, so the two must be equal`,
    );
    expect(error.hint).toBe(`link libdep.so with -Wl,-soname,libdep.so; ${SHIPPING}`);
    expect(error.details).toEqual({ library: lib, dependency: "libdep.so", path: join(folder, "libdep.so") });
    library(join(folder, "libdep.so"));
    expect(refusal(() => plan(folder, lib)).message).toBe(
      `${lib} needs libdep.so, found in the plugin's folder as libdep.so, but that library has no DT_SONAME; the loader matches the approved copy by its soname, so the two must be equal`,
    );
  });

  test("a file that is not a shared library, the plugin's or one it ships, is refused naming it", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const dep = library(join(folder, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    writeFileSync(dep, "not a library\n");
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(`${dep} cannot be loaded: it does not start with the ELF magic bytes, so it is not a shared library`);
    expect(error.hint).toBe("a plugin library and every library it ships must be a 64-bit ELF shared object built for this machine");
    expect(error.details).toEqual({ library: dep });
    expect(refusal(() => plan(folder, dep)).message).toBe(`${dep} cannot be loaded: it does not start with the ELF magic bytes, so it is not a shared library`);
  });

  test("a file that changed since the folder was hashed, or the library gone, is refused: try again", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const dep = library(join(folder, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    const changed = refusal(() => plan(folder, lib, { kept: (rel) => rel !== "libdep.so" }));
    expect(changed.message).toBe(`${dep} changed while the plugin's folder was being checked`);
    expect(changed.hint).toBe("try again");
    for (const gone of [join(folder, "gone.so"), join(folder, "a-folder.so")]) {
      if (gone.endsWith("a-folder.so")) mkdirSync(gone);
      const error = refusal(() => plan(folder, gone));
      expect(error.message).toBe(`${gone} changed while it was being checked`);
      expect(error.hint).toBe("try again");
    }
  });

  test.each(["$LIB", "${LIB}/x", "$PLATFORM/x", "${PLATFORM}"])("'%s' in a RUNPATH is refused, not guessed", (path) => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const lib = library(join(folder, "plugin.so"), ["-lgcc_s", "-Wl,--enable-new-dtags", `-Wl,-rpath,$ORIGIN:${path}`]);
    const error = refusal(() => plan(folder, lib));
    expect(error.message).toBe(`${lib} has '${path}' in its DT_RUNPATH, and cxagent does not resolve $${path.includes("LIB") ? "LIB" : "PLATFORM"}`);
    expect(error.hint).toBe(`use '$ORIGIN' paths only; ${SHIPPING}`);
  });

  test("a folder under $ORIGIN whose name only begins like $LIB is an ordinary folder", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "$LIBX", "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${join(folder, "$LIBX")}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/$LIBX"]);
    expect(plan(folder, lib).inSet).toEqual([{ path: "$LIBX/libdep.so", soname: "libdep.so" }]);
  });

  test("a library needed by a path: an absolute one as it is, a relative one from the working folder", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const outside = join(dir.path, "outside");
    const stub = library(join(outside, "libstub.so")); // no soname: needed by the path it was linked with
    const lib = library(join(folder, "plugin.so"), [stub]);
    expect(refusal(() => plan(folder, lib)).message).toBe(
      `${lib} needs ${stub}, which the loader would load from ${stub}: outside the plugin's folder ${realpathSync(folder)} and not a system library, so it could change after you approve the plugin`,
    );
    rmSync(stub);
    expect(refusal(() => plan(folder, lib)).message).toBe(`${lib} needs ${stub}, which the loader would find nowhere (searched: ${stub})`);
    // linked from inside the folder as sub/libdep.so
    library(join(folder, "sub", "libdep.so"));
    const r = Bun.spawnSync([cc, "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", "rel.so", `${stub}.c`, "sub/libdep.so"], { cwd: folder, stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${cc} failed: ${r.stderr.toString()}`);
    const rel = join(folder, "rel.so");
    expect(refusal(() => plan(folder, rel)).message).toBe(
      `${rel} needs the plugin's own sub/libdep.so by its path ('sub/libdep.so'), so the loader would open it again from disk instead of the approved copy`,
    );
    expect(refusal(() => plan(folder, rel, { cwd: outside })).message).toBe(`${rel} needs sub/libdep.so, which the loader would find nowhere (searched: ${join(outside, "sub/libdep.so")})`);
  });
});

/** Rewrites the DT_SONAME entry of a 64-bit little-endian ELF file into a DT_RUNPATH with the same string: a library with both DT_RPATH and DT_RUNPATH, which today's linkers do not write. */
function sonameToRunpath(path: string): void {
  const bytes = readFileSync(path);
  const phoff = Number(bytes.readBigUInt64LE(32));
  const phentsize = bytes.readUInt16LE(54);
  for (let i = 0; i < bytes.readUInt16LE(56); i++) {
    const ph = phoff + i * phentsize;
    if (bytes.readUInt32LE(ph) !== 2) continue; // PT_DYNAMIC
    const start = Number(bytes.readBigUInt64LE(ph + 8));
    for (let at = start; at < start + Number(bytes.readBigUInt64LE(ph + 32)); at += 16) {
      if (bytes.readBigUInt64LE(at) === 14n) {
        bytes.writeBigUInt64LE(29n, at);
        writeFileSync(path, bytes);
        return;
      }
    }
  }
  throw new Error(`${path} has no DT_SONAME to rewrite`);
}

describe("the search paths' own edges", () => {
  test("a folder outside searched before the shipped library is found in the plugin's folder is no risk: the approved copy is matched by its soname", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const outside = join(dir.path, "outside");
    mkdirSync(outside, { recursive: true });
    library(join(folder, "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-ldep", "-Wl,--enable-new-dtags", `-Wl,-rpath,${outside}:$ORIGIN`]);
    expect(plan(folder, lib).inSet).toEqual([{ path: "libdep.so", soname: "libdep.so" }]);
  });

  test("with both DT_RPATH and DT_RUNPATH, the loader ignores DT_RPATH", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    library(join(folder, "libgone.so"), ["-Wl,-soname,libgone.so"]);
    const lib = library(join(folder, "plugin.so"), [`-L${folder}`, "-lgone", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/from-rpath", "-Wl,-soname,$ORIGIN/from-runpath"]);
    rmSync(join(folder, "libgone.so"));
    sonameToRunpath(lib);
    const searched = [join(folder, "from-runpath"), "the loader's cache", ...systemLoader().defaultDirs];
    expect(refusal(() => plan(folder, lib)).message).toBe(`${lib} needs libgone.so, which the loader would find nowhere (searched: ${searched.join(", ")})`);
  });

  test("$ORIGIN alone, or a numeric folder below its first, is the plugin's; $ORIGIN not at the start of an entry is a path like any other", () => {
    using dir = tempDir();
    const folder = join(dir.path, "plugin");
    const bare = library(join(folder, "bare.so"), ["-lgcc_s", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    expect(plan(folder, bare).system[0]).toEqual({ name: GCC, path: gccPath() });
    library(join(folder, "lib", "12", "libdep.so"), ["-Wl,-soname,libdep.so"]);
    const deep = library(join(folder, "deep.so"), [`-L${join(folder, "lib", "12")}`, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib/12"]);
    expect(plan(folder, deep).inSet).toEqual([{ path: "lib/12/libdep.so", soname: "libdep.so" }]);
    const outside = join(dir.path, "outside");
    const inner = library(join(folder, "inner.so"), ["-lgcc_s", "-Wl,--enable-new-dtags", `-Wl,-rpath,${outside}/$ORIGIN`]);
    const error = refusal(() => plan(folder, inner));
    expect(error.details).toEqual({ library: inner, dependency: GCC, path: `${outside}${folder}` });
  });
});
