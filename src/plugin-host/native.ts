/**
 * Starting a plugin of the cxagent ABI (SPEC §3): load its library — the libraries it ships first,
 * from their approved copies — check every mandatory export and the handshake, read the manifest,
 * attach the host table, then hand the exports to the shim, whose threads serve every request
 * until the parent closes stdin. The manifest is parsed here and validated by the parent
 * (protocol/manifest.ts, checkDescribed), so this path loads no validator.
 */
import { CFunction, CString, FFIType, type Pointer } from "bun:ffi";
import { CONTRACT_CURRENT, CONTRACT_OLDEST, contractInRange, MANDATORY_EXPORTS, type OptionalExport, tooDeep, tooDeepText } from "../protocol/contract.ts";
import { preview } from "../protocol/issues.ts";
import { beginCheckMode, type CheckMode } from "./check-mode.ts";
import { openLibrary } from "./library.ts";
import { readyLine, tooLongText } from "./ready-line.ts";
import type { HostStart } from "./start.ts";

const POOL_START = 2;

export function startNative(start: HostStart): never {
  const { libc, shim, settings, refuse, phase } = start;
  const path = settings.library;

  // 2. Load the library (library.ts).
  const lib = openLibrary(start);
  const address = (name: string) => libc.symbol(lib, name);

  const missing = MANDATORY_EXPORTS.filter((name) => !address(name));
  if (missing.length > 0) {
    const list = missing.join(", ");
    return refuse(
      "exports",
      `${path} does not export ${missing.length === 1 ? "the mandatory function" : `${missing.length} mandatory functions`}: ${list}` +
        ` (C: each declared with CXAGENT_PLUGIN_EXPORT from cxagent_plugin.h; Rust: #[unsafe(no_mangle)] pub extern "C" fn)`,
    );
  }
  const exported = (name: string) => address(name)!;
  const optional = (name: string) => address(name);

  // 3. The handshake.
  phase("cxagent_plugin_abi_version");
  const abiVersion = CFunction({ ptr: exported("cxagent_plugin_abi_version"), args: [], returns: FFIType.i32 })();
  if (!contractInRange(abiVersion)) {
    const why = abiVersion > CONTRACT_CURRENT ? "newer than this host understands" : "older than this host still supports";
    return refuse(
      "handshake",
      `handshake refused: the plugin was built against contract ${abiVersion}, which is ${why}; ` +
        `this host accepts contracts ${CONTRACT_OLDEST} to ${CONTRACT_CURRENT}`,
    );
  }

  // Check mode (`cxagent check`): the shim's watching wrappers take the exports' place from here on.
  let check: CheckMode | null = null;
  if (settings.check) {
    const begun = beginCheckMode(libc, shim, lib, exported("cxagent_plugin_describe"), exported("cxagent_plugin_free"));
    if ("error" in begun) return refuse("load", begun.error);
    check = begun;
  }

  // 4. Describe: copy the manifest, free it, then parse it.
  const plainFree = CFunction({ ptr: exported("cxagent_plugin_free"), args: [FFIType.ptr], returns: FFIType.void });
  const free = (p: Pointer) => (check ? check.free(p) : plainFree(p));
  phase("cxagent_plugin_describe");
  const describe = CFunction({ ptr: exported("cxagent_plugin_describe"), args: [], returns: FFIType.ptr });
  const raw = (check ? check.describe() : describe()) as Pointer | null;
  if (!raw) return refuse("manifest", "cxagent_plugin_describe returned NULL; it must always return the manifest");
  let text: string;
  try {
    text = String(new CString(raw));
  } finally {
    free(raw);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return refuse("manifest", `cxagent_plugin_describe returned invalid JSON (${(error as Error).message}): ${preview(text)}`);
  }
  // Too deep to write back on the startup line; everything else about it is the parent's to check.
  const deep = tooDeep(parsed);
  if (deep !== null) return refuse("manifest", `the manifest from cxagent_plugin_describe has 1 problem:\n  - ${tooDeepText(deep)}`);

  const present: Record<OptionalExport, Pointer | null> = {
    poll: optional("cxagent_plugin_poll"),
    command: optional("cxagent_plugin_command"),
    attach: optional("cxagent_plugin_attach"),
  };

  // 5. Attach, once, before start.
  if (present.attach) {
    phase("cxagent_plugin_attach");
    CFunction({ ptr: present.attach, args: [FFIType.ptr], returns: FFIType.void })(check ? check.table() : shim.table());
  }

  // 6. Ready: from here on the shim's threads serve every request.
  (check ? check.setExports : shim.setExports)([
    exported("cxagent_plugin_start"),
    exported("cxagent_plugin_invoke"),
    exported("cxagent_plugin_gate"),
    exported("cxagent_plugin_stop"),
    exported("cxagent_plugin_free"),
    present.poll,
    present.command,
  ]);
  const exports = (Object.keys(present) as OptionalExport[]).filter((k) => present[k]);
  const ready = readyLine({ ready: true, contract: abiVersion, manifest: parsed, exports });
  if ("tooLong" in ready) return refuse("manifest", tooLongText("the manifest from cxagent_plugin_describe", ready.tooLong));
  shim.writeText(ready.text);
  if (shim.serve(POOL_START) !== 0) {
    process.stderr.write("cxagent plugin host: could not start the request threads\n");
    process.exit(1);
  }
  process.exit(shim.wait());
}
