/**
 * The sidecar `<stem>.plugin.json` beside a library: read and checked strictly before any of the
 * plugin's code could run (SPEC §4.2).
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { CxError } from "../errors.ts";
import { schemaProblems } from "../json-schema/check.ts";
import type { CheckedSchemas } from "../json-schema/checked.ts";
import type { Problem } from "../protocol/issues.ts";
import { checkManifest, describeProblems, type Manifest } from "../protocol/manifest.ts";

export const SIDECAR_SUFFIX = ".plugin.json";

/** Shared-library extensions, this platform's first. */
export const LIBRARY_EXTENSIONS =
  process.platform === "darwin" ? [".dylib", ".so"] : process.platform === "win32" ? [".dll"] : [".so"];

export function isLibraryFile(name: string): boolean {
  return LIBRARY_EXTENSIONS.includes(extname(name));
}

/** A module plugin's code: `<stem>.ts`, `.js` or `.mjs` beside `<stem>.plugin.json` (issue 19). */
export const MODULE_EXTENSIONS = [".ts", ".js", ".mjs"];

export function isModuleFile(name: string): boolean {
  return MODULE_EXTENSIONS.includes(extname(name));
}

/** What kind of plugin a file is, by its name alone: decided before any of its code runs. */
export function pluginKindOf(path: string): "native" | "module" {
  return isModuleFile(path) ? "module" : "native";
}

/** The sidecar path of a library: the library path minus its last extension, plus `.plugin.json`. */
export function sidecarPathOf(library: string): string {
  const ext = extname(library);
  return join(dirname(library), basename(library, ext) + SIDECAR_SUFFIX);
}

/** The library a sidecar describes, if it exists beside it; else its module, if one does. */
export function libraryOfSidecar(sidecar: string): string | null {
  const stem = sidecar.slice(0, -SIDECAR_SUFFIX.length);
  for (const ext of [...LIBRARY_EXTENSIONS, ...MODULE_EXTENSIONS]) if (existsSync(stem + ext)) return stem + ext;
  return null;
}

export function readSidecar(path: string, library: string): Manifest {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw noSidecar(path, library);
  }
  return parseSidecar(text, path);
}

export function noSidecar(path: string, library: string): CxError {
  return new CxError("E_MANIFEST", `the plugin library ${library} has no sidecar ${basename(path)} beside it`, {
    hint: `a plugin ships its manifest as ${path}, so it can be checked before any of its code runs`,
  });
}

/** What each sidecar's manifest was checked from, for sidecarJson. */
const parsedFrom = new WeakMap<Manifest, unknown>();

/** The JSON a manifest parseSidecar returned was checked from (see protocol/manifest.ts, KnownManifest). */
export function sidecarJson(manifest: Manifest): string | undefined {
  return parsedFrom.has(manifest) ? JSON.stringify(parsedFrom.get(manifest)) : undefined;
}

/**
 * Checks a sidecar's text (read once, by the load-set hash, when loading). With `known`, an
 * inputSchema this build found valid before is not checked again (json-schema/checked.ts).
 */
export function parseSidecar(text: string, path: string, known?: CheckedSchemas): Manifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CxError("E_MANIFEST", `the sidecar ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const checked = checkManifest(parsed);
  const problems = checked.ok ? inputSchemaProblems(checked.manifest, known) : checked.problems;
  if (!checked.ok || problems.length) {
    const n = problems.length;
    throw new CxError("E_MANIFEST", `the sidecar ${path} has ${n} problem${n === 1 ? "" : "s"}:\n${describeProblems(problems)}`, {
      hint: "fix the sidecar; it must match what cxagent_plugin_describe returns",
      details: { path, problems },
    });
  }
  parsedFrom.set(checked.manifest, parsed);
  return checked.manifest;
}

/**
 * Each tool's inputSchema must be a valid JSON Schema (draft 2020-12, or draft-07 by its
 * `$schema`): arguments are checked against it before the plugin sees them.
 */
function inputSchemaProblems(manifest: Manifest, known: CheckedSchemas | undefined): Problem[] {
  const problems = manifest.tools.flatMap((tool, i) =>
    (["inputSchema", "outputSchema"] as const).flatMap((key) => {
      const schema = tool[key];
      if (schema === undefined || known?.has(schema)) return [];
      const found = schemaProblems(schema);
      if (!found.length) known?.remember(schema);
      return found.map((p) => {
        const at = `tools[${i}].${key}${p.path ? (p.path.startsWith("[") ? p.path : `.${p.path}`) : ""}`;
        return { path: at, message: `${at}: ${p.message.replace(/^[^:]*: /, "")} — not a valid JSON Schema (tool '${tool.name}')` };
      });
    }),
  );
  known?.save();
  return problems;
}
