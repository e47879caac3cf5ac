/**
 * Building a Rust plugin crate with cargo, for scripts/build-native.ts (the examples) and the
 * tests. The build tree goes to a target folder the caller names, never inside the crate: the
 * crate's folder is a plugin's load set, and every file in it is hashed and approved.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** cargo on PATH, or null: Rust examples are then skipped, with a message. */
export function findCargo(): string | null {
  return Bun.which("cargo");
}

/** The name cargo gives the library: [lib] name, else the package name, '-' becoming '_'. */
export function crateLibraryName(crateDir: string): string {
  const toml = readFileSync(join(crateDir, "Cargo.toml"), "utf8");
  const section = (name: string) => new RegExp(`^\\[${name}\\]([\\s\\S]*?)(?=^\\[|(?![\\s\\S]))`, "m").exec(toml)?.[1] ?? "";
  const nameIn = (text: string) => /^\s*name\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const name = nameIn(section("lib")) ?? nameIn(section("package"));
  if (!name) throw new Error(`${crateDir}/Cargo.toml names no package`);
  return name.replaceAll("-", "_");
}

/** Where cargo puts a cdylib: lib<name>.so on Linux, lib<name>.dylib on macOS, <name>.dll on Windows. */
export function cdylibPath(targetDir: string, libraryName: string): string {
  const file =
    process.platform === "darwin" ? `lib${libraryName}.dylib` : process.platform === "win32" ? `${libraryName}.dll` : `lib${libraryName}.so`;
  return join(targetDir, "release", file);
}

export interface CargoBuild {
  ok: boolean;
  /** The built library inside the target folder. */
  library: string;
  /** What cargo printed (empty when its output was inherited). */
  output: string;
}

/** `cargo build --release --offline` of the crate in `crateDir`, into `targetDir`. */
export function buildCrate(crateDir: string, targetDir: string, options: { inherit?: boolean } = {}): CargoBuild {
  const cargo = findCargo();
  if (!cargo) throw new Error("cargo is not on PATH");
  const proc = Bun.spawnSync([cargo, "build", "--release", "--offline", "--quiet", "--manifest-path", join(crateDir, "Cargo.toml")], {
    env: { ...process.env, CARGO_TARGET_DIR: targetDir },
    stdout: options.inherit ? "inherit" : "pipe",
    stderr: options.inherit ? "inherit" : "pipe",
  });
  const output = options.inherit ? "" : `${proc.stdout?.toString() ?? ""}${proc.stderr?.toString() ?? ""}`;
  return { ok: proc.exitCode === 0, library: cdylibPath(targetDir, crateLibraryName(crateDir)), output };
}
