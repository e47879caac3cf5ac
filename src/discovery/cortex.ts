/**
 * Cortex native plugins before any of their code runs (SPEC §6.1 for the other kinds). A Cortex
 * plugin is a shared library that exports `cortex_plugin_init` and none of the `cxagent_plugin_*`
 * functions (read from its dynamic symbol table: discovery/kind.ts). It has no sidecar; what can
 * be shown before it runs comes from the `manifest.toml` Cortex packages carry, when there is one:
 *
 *   name = "native-hello"                 the plugin's name in cxagent (else the library's file name)
 *   version = "0.1.0"
 *   description = "..."
 *   [native]
 *   library = "lib/libnative_hello.so"   relative to the manifest's folder, inside it
 *   abi_version = 1                       must be 1 when given
 *   isolation = "trusted_in_process"      "process": a process plugin, whose [[native.tools]] are read by
 *                                         protocol/cortex-process.ts (a library here is refused)
 *
 *   [cxagent.sandbox]                     what it may touch, enforced by the kernel (protocol/sandbox.ts)
 *
 * Every other key is Cortex's own and ignored (its `[sandbox]` too, which means something else). The folder holding manifest.toml is the plugin's
 * load set; without one, the library's own folder is.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, extname, isAbsolute, join, resolve, sep } from "node:path";
import { parse, TomlError } from "smol-toml";
import * as v from "valibot";
import { CxError } from "../errors.ts";
import { describeValue, toProblems } from "../protocol/issues.ts";
import { isPluginName, PLUGIN_NAME_RULE } from "../protocol/manifest.ts";
import { type SandboxDeclaration, SandboxSchema } from "../protocol/sandbox.ts";

export const CORTEX_MANIFEST = "manifest.toml";
/** The Cortex native ABI cxagent loads (the Cortex SDK's NATIVE_ABI_VERSION). */
export const CORTEX_ABI = 1;

/** What a manifest.toml says, as far as cxagent reads it. */
export interface CortexManifest {
  /** Its absolute path. */
  path: string;
  name: string;
  version: string;
  description: string | null;
  /** The library it names, as an absolute path (not checked to exist), or null when it names none. */
  library: string | null;
  abiVersion: number | null;
  /** `[cxagent.sandbox]`: what it may touch (protocol/sandbox.ts); Cortex's own `[sandbox]` is not read. */
  sandbox?: SandboxDeclaration;
}

const Text = v.pipe(v.string(), v.check((s) => s.trim() !== "", "must not be blank"));

const CortexManifestSchema = v.object({
  name: v.pipe(v.string(), v.check(isPluginName, (i) => `${describeValue(i.input)} is not a plugin name cxagent can use (${PLUGIN_NAME_RULE})`)),
  version: Text,
  description: v.optional(v.string()),
  native: v.optional(
    v.object({
      library: v.optional(Text),
      abi_version: v.optional(v.pipe(v.number(), v.integer())),
      isolation: v.optional(v.string()),
    }),
  ),
  cxagent: v.optional(v.object({ sandbox: v.optional(SandboxSchema) })),
});

/** Reads a manifest.toml's text (the bytes the load set's hash read); throws E_MANIFEST naming the file. */
export function parseCortexManifest(bytes: Uint8Array, path: string): CortexManifest {
  const invalid = (why: string, hint?: string) =>
    new CxError("E_MANIFEST", `the Cortex manifest ${path} is invalid: ${why}`, { hint: hint ?? "fix the manifest.toml; cxagent reads name, version, description and [native] library and abi_version from it", details: { path } });
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid("it is not UTF-8 text");
  }
  let document: unknown;
  try {
    document = parse(text, { integersAsBigInt: "asNeeded" });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    throw invalid(`it is not valid TOML (line ${error.line}, column ${error.column}: ${error.message.replace(/^Invalid TOML document: /, "").split("\n")[0]})\n${error.codeblock.trimEnd()}`);
  }
  const checked = v.safeParse(CortexManifestSchema, document);
  if (!checked.success) {
    const problems = toProblems(checked.issues, "manifest.toml").map((p, i) => (checked.issues[i]?.input === undefined && p.path ? `${p.path} is required` : p.message));
    throw invalid(problems.join("; "));
  }
  const { name, version, description, native, cxagent } = checked.output;
  if (native?.isolation !== undefined && native.isolation !== "trusted_in_process") {
    throw invalid(
      `[native] isolation is ${JSON.stringify(native.isolation)}: a process-isolated Cortex plugin, whose tools are commands Cortex runs one process per call, but it lists no [[native.tools]]`,
      "a Cortex process plugin lists its tools as [[native.tools]] (name, description, command); a native one says isolation = \"trusted_in_process\" and names its library",
    );
  }
  if (native?.abi_version !== undefined && native.abi_version !== CORTEX_ABI) {
    throw invalid(`[native] abi_version is ${native.abi_version}; cxagent loads Cortex native ABI ${CORTEX_ABI}`, "rebuild the plugin with a Cortex SDK of native ABI 1");
  }
  let library: string | null = null;
  if (native?.library !== undefined) {
    const folder = dirname(path);
    const named = native.library;
    const at = resolve(folder, named);
    if (isAbsolute(named) || (at !== folder && !at.startsWith(folder + sep))) {
      throw invalid(`[native] library ${JSON.stringify(named)} is outside the plugin's folder ${folder}`, "a plugin's library must be inside the folder of its manifest.toml, which is what gets approved");
    }
    library = at;
  }
  return { path, name, version, description: description ?? null, library, abiVersion: native?.abi_version ?? null, ...(cxagent?.sandbox ? { sandbox: cxagent.sandbox } : {}) };
}

/** The name a Cortex library without a manifest.toml gets: its file name, less the extension and a leading "lib". */
export function nameFromLibrary(library: string): string | null {
  const stem = basename(library, extname(library));
  const bare = stem.startsWith("lib") && isPluginName(stem.slice(3)) ? stem.slice(3) : stem;
  return isPluginName(bare) ? bare : null;
}

/**
 * The manifest.toml that belongs to a Cortex library found by its path: the one beside it, or one
 * in the folder above whose [native] library is this library (the Cortex package layout,
 * `lib/<library>`). Null when there is none. Nothing is refused here: the load reads the manifest
 * again from the bytes it hashes, and refuses one that is invalid or names another library.
 */
export function manifestOfLibrary(library: string, read: (path: string) => CortexManifest): string | null {
  const beside = join(dirname(library), CORTEX_MANIFEST);
  if (isFile(beside)) return beside;
  const above = join(dirname(dirname(library)), CORTEX_MANIFEST);
  if (!isFile(above)) return null;
  try {
    const named = read(above).library;
    return named !== null && sameFile(named, library) ? above : null;
  } catch (error) {
    if (error instanceof CxError) return null;
    throw error;
  }
}

export function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

export function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function hasCortexManifest(folder: string): boolean {
  return existsSync(join(folder, CORTEX_MANIFEST)) && isFile(join(folder, CORTEX_MANIFEST));
}
