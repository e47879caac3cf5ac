/**
 * Starting a Cortex native plugin (the Cortex SDK's `cortex_plugin_init`): load its library, call
 * `cortex_plugin_init` with ABI 1, check the table it fills, read `plugin_info` and every tool
 * descriptor, and report the manifest made from them (cortex-manifest.ts) — then hand the table to
 * the shim (ffi/shim/85-cortex.c), whose threads serve every request as for any other plugin.
 *
 * The table (CortexPluginApi, 64 bytes on every LP64 target): abi_version u32 @0, plugin @8,
 * plugin_info @16, tool_count @24, tool_descriptor @32, tool_execute @40, plugin_drop @48,
 * buffer_free @56. bun:ffi can make the init call itself (two pointers and an int); everything
 * that passes a CortexBuffer by value goes through the shim.
 */
import { CFunction, FFIType, ptr } from "bun:ffi";
import { checkManifest, describeProblems } from "../protocol/manifest.ts";
import type { Problem } from "../protocol/issues.ts";
import { preview } from "../protocol/issues.ts";
import type { ToolDeadline } from "../protocol/wire.ts";
import { CORTEX_ABI, deadlineOf, type Descriptor, DescriptorSchema, PluginInfoSchema, readCortexJson, synthesizeManifest } from "./cortex-manifest.ts";
import { beginCheckMode } from "./check-mode.ts";
import { openLibrary } from "./library.ts";
import { readyLine, tooLongText } from "./ready-line.ts";
import type { HostStart } from "./start.ts";
import type { CortexText } from "./shim.ts";

const POOL_START = 2;
/** More tools than any plugin declares: a count past this is taken for garbage, not read. */
export const MAX_TOOLS = 4096;

const TABLE_ENTRIES = [
  ["plugin_info", 16],
  ["tool_count", 24],
  ["tool_descriptor", 32],
  ["tool_execute", 40],
  ["plugin_drop", 48],
  ["buffer_free", 56],
] as const;

const INIT_STATUS: Record<number, string> = {
  [-1]: "-1, which the Cortex SDK returns for a NULL argument (cxagent passed neither)",
  [-2]: `-2: the plugin does not speak Cortex native ABI ${CORTEX_ABI}, the version this host offered`,
};

export function startCortex(start: HostStart): never {
  const { libc, shim, settings, refuse, phase } = start;
  const path = settings.library;
  const lib = openLibrary(start);
  const init = libc.symbol(lib, "cortex_plugin_init");
  if (!init) return refuse("exports", `${path} does not export cortex_plugin_init, the entry point of a Cortex native plugin`);
  // Check mode (`cxagent check`): every buffer the table returns is judged before buffer_free gets it.
  if (settings.check) {
    if ("error" in beginCheckMode(libc, shim, lib, null, null)) return refuse("load", "the shim could not begin check mode");
    shim.check.cortex();
  }

  // The handshake: CortexHostApi {abi_version: 1} in, the table out. Both stay alive for good:
  // the plugin may keep the host pointer.
  phase("cortex_plugin_init");
  const host = new Uint32Array([CORTEX_ABI]);
  const table = new Uint8Array(64);
  shim.keep.push(host, table);
  const status = CFunction({ ptr: init, args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 })(ptr(host), ptr(table));
  const handshake = (why: string): never => refuse("handshake", `handshake refused: ${why}`);
  if (status !== 0) return handshake(`cortex_plugin_init returned ${INIT_STATUS[status] ?? `status ${status}, not 0`}`);
  const view = new DataView(table.buffer);
  const abi = view.getUint32(0, true);
  if (abi !== CORTEX_ABI) return handshake(`the table cortex_plugin_init filled says abi_version ${abi}; this host speaks Cortex native ABI ${CORTEX_ABI}`);
  if (view.getBigUint64(8, true) === 0n) return handshake("cortex_plugin_init returned a NULL plugin state");
  const missing = TABLE_ENTRIES.filter(([, at]) => view.getBigUint64(at, true) === 0n).map(([name]) => name);
  if (missing.length) return handshake(`the table cortex_plugin_init filled is missing ${missing.join(", ")} (NULL)`);
  if (!shim.cortex.set(table, settings.sessionId, settings.source ?? "library")) return handshake("the plugin host had no memory for the plugin's table");

  // What the plugin declares: plugin_info, then each tool's descriptor.
  phase("plugin_info");
  const info = readCortexJson(PluginInfoSchema, text(shim.cortex.info(), "plugin_info", handshake), "plugin_info");
  if (!info.ok) return handshake(`plugin_info is invalid:\n${problems(info.problems)}`);
  phase("tool_count");
  const count = shim.cortex.count();
  if (count > BigInt(MAX_TOOLS)) return handshake(`tool_count returned ${count}, more than the ${MAX_TOOLS} tools this host reads`);
  phase("tool_descriptor");
  const descriptors: Descriptor[] = [];
  for (let i = 0; i < Number(count); i++) {
    const what = `tool_descriptor(${i})`;
    const read = readCortexJson(DescriptorSchema, text(shim.cortex.descriptor(i), what, handshake), what);
    if (!read.ok) return handshake(`${what} is invalid:\n${problems(read.problems)}`);
    descriptors.push(read.value);
  }

  // The manifest, validated like any other (names, duplicates); the parent claims the names.
  const manifest = synthesizeManifest(info.value, descriptors);
  const checked = checkManifest(manifest);
  if (!checked.ok) {
    const n = checked.problems.length;
    return refuse("manifest", `the manifest made from plugin_info and the tool descriptors has ${n} problem${n === 1 ? "" : "s"}:\n${describeProblems(checked.problems)}`);
  }
  const deadlines: ToolDeadline[] = descriptors.flatMap((d) => {
    const ms = deadlineOf(d);
    return ms === null ? [] : [{ tool: d.name, ms }];
  });
  // Each buffer fits a line, but their sum need not (ready-line.ts).
  const ready = readyLine({ ready: true, contract: checked.manifest.pluginContract, manifest, exports: [], deadlines, about: info.value.description });
  if ("tooLong" in ready) return refuse("manifest", tooLongText(`the manifest made from plugin_info and the ${descriptors.length} tool descriptors`, ready.tooLong));
  shim.writeText(ready.text);
  if (shim.serve(POOL_START) !== 0) {
    process.stderr.write("cxagent plugin host: could not start the request threads\n");
    process.exit(1);
  }
  process.exit(shim.wait());
}

/** A buffer's text: it must be there, and be UTF-8. */
function text(copy: CortexText, what: string, handshake: (why: string) => never): string {
  if ("problem" in copy) return handshake(`${what} returned ${copy.problem}`);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(copy.bytes);
  } catch {
    return handshake(`${what} returned bytes that are not UTF-8: ${preview(new TextDecoder().decode(copy.bytes))}`);
  }
}

function problems(list: readonly Problem[]): string {
  return list.map((p) => `  - ${p.message}`).join("\n");
}
