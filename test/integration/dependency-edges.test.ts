/**
 * The edges of the dependency plan (src/trust/dependencies.ts), each on libraries compiled here:
 * a folder beside the plugin's whose name begins with the plugin folder's name is outside it;
 * `$ORIGIN/..` is refused even where it would lead back inside; two shipped libraries with one
 * soname are refused, while one library needed twice is not.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, realpathSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** The plan for `lib` in `folder`, as the load pipeline asks for it: every file of the folder kept. */
function plan(folder: string, lib: string) {
  const realFolder = realpathSync(folder);
  return planDependencies({
    library: lib,
    realFolder,
    bytesOf: (rel) => {
      try {
        return readFileSync(join(realFolder, rel));
      } catch {
        return undefined;
      }
    },
    env: {},
    cwd: folder,
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
