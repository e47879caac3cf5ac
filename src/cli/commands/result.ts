import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError } from "../../errors.ts";
import { inertBlock } from "../../inert.ts";
import { resultStore } from "../../session/state.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { isTTY, out, outBytes } from "../_stdio.ts";

/**
 * `cxagent result <ref>` (issue 41): a stored result, or a part of it, read through this state
 * folder's store (its hash is checked on every read). Without --json the bytes go to stdout
 * exactly as stored (on a terminal, made inert); with --json one document saying which part it is.
 */
export default defineCommand({
  meta: commandMeta({
    name: "result",
    description: "Print a stored result (a reference cxref:sha256-… that a call over its delivery cap gave), whole or from --offset for --length bytes",
    summary: "Print a stored result by its reference",
  }),
  args: {
    ref: { type: "positional", description: "The reference: cxref:sha256- and 64 hexadecimal digits", required: true },
    offset: { type: "string", description: "The first byte to print (default 0)", valueHint: "N" },
    length: { type: "string", description: "How many bytes to print (default: to the end)", valueHint: "N" },
  },
  run({ args }): CommandResult {
    const options = globalOptions(args);
    const offset = byteCount(args.offset, "--offset") ?? 0;
    const length = byteCount(args.length, "--length");
    const { bytes, info } = resultStore(options).read(String(args.ref), offset, length);
    const from = Math.min(offset, info.bytes);
    if (options.json) {
      return {
        json: {
          ref: info.ref,
          sha256: info.sha256,
          bytes: info.bytes,
          offset: from,
          length: bytes.length,
          more: from + bytes.length < info.bytes,
          plugin: info.plugin ?? null,
          tool: info.tool ?? null,
          createdAt: info.createdAt ?? null,
          text: bytes.toString("utf8"),
        },
      };
    }
    if (isTTY(1)) out(inertBlock(bytes.toString("utf8")) + "\n");
    else outBytes(bytes);
    return { json: undefined };
  },
});

function byteCount(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new CxError("E_USAGE", `${flag} takes a whole number of bytes, 0 or more, not '${String(value)}'`);
  return n;
}
