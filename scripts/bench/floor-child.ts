/**
 * The floor: the least a process-isolated call can cost with this stack. A Bun child reads JSON
 * lines, calls the plugin's invoke through bun:ffi, frees the answer and writes a JSON line back.
 * Usage: bun floor-child.ts <library>
 */
import { CString, dlopen, FFIType, type Pointer } from "bun:ffi";

const lib = dlopen(process.argv[2]!, {
  cxagent_plugin_invoke: { args: [FFIType.cstring, FFIType.cstring], returns: FFIType.ptr },
  cxagent_plugin_free: { args: [FFIType.ptr], returns: FFIType.void },
});
const out = Bun.stdout.writer();
const decoder = new TextDecoder();
let buffer = "";
for await (const chunk of Bun.stdin.stream()) {
  buffer += decoder.decode(chunk, { stream: true });
  let nl: number;
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const request = JSON.parse(buffer.slice(0, nl));
    buffer = buffer.slice(nl + 1);
    const p = lib.symbols.cxagent_plugin_invoke(request.tool, JSON.stringify(request.arguments)) as Pointer;
    const envelope = JSON.parse(String(new CString(p)));
    lib.symbols.cxagent_plugin_free(p);
    out.write(JSON.stringify({ id: request.id, ...envelope }) + "\n");
  }
  out.flush();
}
