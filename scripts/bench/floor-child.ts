/**
 * The floor: the least a process-isolated call costs with this stack and no design of its own. A
 * Bun child reads JSON lines, calls the plugin's invoke through bun:ffi, frees the answer and
 * writes a JSON line back.
 * Usage: bun floor-child.ts <library>
 */
import { CString, dlopen, FFIType, type Pointer } from "bun:ffi";
import { forEachLine } from "./floor-lines.ts";

const lib = dlopen(process.argv[2]!, {
  cxagent_plugin_invoke: { args: [FFIType.cstring, FFIType.cstring], returns: FFIType.ptr },
  cxagent_plugin_free: { args: [FFIType.ptr], returns: FFIType.void },
});
const out = Bun.stdout.writer();
let flushing = false;
await forEachLine(Bun.stdin.stream(), (line) => {
  const request = JSON.parse(line);
  const p = lib.symbols.cxagent_plugin_invoke(request.tool, JSON.stringify(request.arguments)) as Pointer;
  const envelope = JSON.parse(String(new CString(p)));
  lib.symbols.cxagent_plugin_free(p);
  out.write(JSON.stringify({ id: request.id, ...envelope }) + "\n");
  // one flush for all the lines of a chunk
  if (!flushing) {
    flushing = true;
    queueMicrotask(() => {
      flushing = false;
      out.flush();
    });
  }
});
