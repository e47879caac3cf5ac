/**
 * A Cortex native plugin's buffers (issue 43), judged once every plugin host of the run has
 * stopped, from what its check-mode hosts saw (ffi/shim/97-check-cortex.c): each returned buffer's
 * len within its cap, none returned again after buffer_free released it (which would free it
 * twice), and none of the buffers the host lends tool_execute freed by the plugin. Whether
 * buffer_free releases each buffer, and whether each is heap memory at all, are `free` and
 * `ownership` (final.ts), as for a cxagent plugin's strings.
 */
import type { CheckEvent } from "../../protocol/wire.ts";
import type { CheckContext } from "../context.ts";
import { fail, pass, plural, quote, skip, type Verdict } from "../report.ts";
import { returnedBy } from "./final.ts";

/** The buffers a Cortex plugin's table returned (they name the function that frees them). */
function buffers(ctx: CheckContext): CheckEvent[] | string {
  const returned = ctx.seen.returned.filter((e) => e.free !== undefined);
  return returned.length ? returned : (ctx.runnable ?? "no table function returned a buffer");
}

const byFunction = (events: readonly CheckEvent[]) => [...new Set(events.map(returnedBy))].join(", ");

export function checkBufferCap(ctx: CheckContext): Verdict {
  const returned = buffers(ctx);
  if (typeof returned === "string") return skip(returned);
  const over = returned.filter((e) => (e.length ?? 0) > (e.cap ?? 0));
  if (over.length) {
    const e = over[0]!;
    return fail(`${byFunction(over)} returned ${plural(over.length, "buffer")} whose len is larger than its cap, e.g. len ${e.length}, cap ${e.cap}: ${quote(e.preview ?? "", 80)}; the host refuses such a buffer (its bytes past cap are not the plugin's), and gives it back to buffer_free with the cap it came with, which a free that rebuilds the allocation from ptr and cap (Rust's Vec::from_raw_parts) gets wrong`,
      "return {ptr, len, cap} with cap the size of the allocation and len the bytes written, len <= cap (Rust: Vec::into_raw_parts or a boxed slice, whose len is its cap)");
  }
  return pass(`all ${plural(returned.length, "buffer")} returned by ${byFunction(returned)} had len <= cap, and went back to buffer_free with the cap they came with`);
}

export function checkFreedOnce(ctx: CheckContext): Verdict {
  const returned = buffers(ctx);
  if (typeof returned === "string") return skip(returned);
  const again = returned.filter((e) => e.repeated);
  if (again.length) {
    return fail(`${byFunction(again)} returned ${plural(again.length, "buffer")} that buffer_free had already released, untouched since (a buffer kept and handed out again?), e.g. ${quote(again[0]!.preview ?? "", 80)}: the host gives every buffer it gets to buffer_free, so each of these would be freed twice (it was not, here, to keep the host alive)`,
      "return a fresh allocation every time, and never touch a buffer once it is returned: the host owns it until buffer_free");
  }
  return pass(`none of the ${plural(returned.length, "buffer")} returned had been released before: buffer_free got each once`);
}

export function checkLentBuffers(ctx: CheckContext): Verdict {
  const returned = buffers(ctx);
  if (typeof returned === "string") return skip(returned);
  const calls = returned.filter((e) => e.export === "tool_execute").length;
  if (calls === 0) return skip("tool_execute was never called (see results)");
  const freed = ctx.seen.lent;
  if (freed.length) {
    const which = [...new Set(freed.map((e) => e.buffer))].join(", ");
    return fail(`tool_execute freed (or wrote into) ${plural(freed.length, "buffer")} the host lent it (${which}) over ${plural(calls, "call")}: a buffer it did not return, which the host still owns and frees itself (here they were fresh copies, so the host lived; an ordinary host would crash)`,
      "read tool_name, input_json and invocation_json only during the call (their cap is 0: they are lent), copy what you keep, and never pass them to buffer_free or free");
  }
  return pass(`tool_execute freed none of the buffers lent to its ${plural(calls, "call")} (tool_name, input_json, invocation_json)`);
}
