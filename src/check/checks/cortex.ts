/**
 * A Cortex native plugin's handshake and describe checks (issue 43): its load (cortex_plugin_init's
 * status and ABI version, the table, plugin_info, tool_count against the descriptors, each
 * descriptor), and what it declares once it runs (each descriptor's schema, description and name,
 * and a plugin_info name that differs from its manifest.toml's). Its calls —
 * arguments made from each schema, is_error results, invalid UTF-8 and invalid JSON answers,
 * concurrency and deadlines — are the calls checks' (calls.ts), on the tools it described.
 */
import type { CheckContext } from "../context.ts";
import { fail, oneLine, pass, plural, skip, type Verdict, warn } from "../report.ts";
import { checkDescriptions, checkNames, checkSchemas } from "./static.ts";
import { profileOf } from "../../kinds/index.ts";

/** cortex_plugin_init, the table, plugin_info and every descriptor: what its plugin host refused at load, by what it said. */
export async function checkCortexLoad(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (!(first instanceof Error)) {
    const n = ctx.described?.tools.length ?? 0;
    return pass(`cortex_plugin_init returned 0 with ABI 1 and a complete table; plugin_info and ${plural(n, "descriptor")} (tool_count ${n}) are valid`);
  }
  const hint = first.hint ?? profileOf(ctx.kind).refusalHint("handshake");
  if (first.code === "E_HANDSHAKE" || first.code === "E_MANIFEST") return fail(oneLine(first.message), hint);
  if (first.code === "E_CRASHED") return fail(oneLine(first.message), "cortex_plugin_init, plugin_info, tool_count and tool_descriptor must return without crashing");
  if (first.code === "E_TIMEOUT") return fail(oneLine(first.message), "cortex_plugin_init, plugin_info, tool_count and tool_descriptor must return promptly: the tools run later, in tool_execute");
  return fail(oneLine(first.message), hint);
}

const RANK = { fail: 3, warn: 2, pass: 1, skip: 0 } as const;

/** Each descriptor's input_schema, description and name, and plugin_info's name against the manifest.toml's, as one verdict. */
export async function checkCortexDescriptors(ctx: CheckContext): Promise<Verdict> {
  if (ctx.runnable !== null) return skip(ctx.runnable);
  const first = await ctx.first();
  if (first instanceof Error || !ctx.described) return skip("the plugin did not load (see handshake)");
  const verdicts: Verdict[] = [checkSchemas(ctx), checkDescriptions(ctx), checkNames(ctx)];
  const manifest = ctx.inspection?.cortex?.manifest;
  const info = first.host.ready.manifest as { name?: unknown } | null;
  if (manifest && typeof info?.name === "string" && info.name !== ctx.inspection!.name) {
    verdicts.push(warn(`plugin_info names it '${info.name}', but its manifest ${manifest} names it '${ctx.inspection!.name}': cxagent uses the manifest's name`, `make PluginInfo's name '${ctx.inspection!.name}', as the Cortex SDK asks`));
  }
  const worst = verdicts.reduce((a, b) => (RANK[b.status] > RANK[a.status] ? b : a));
  if (worst.status === "pass") return pass(verdicts.map((v) => v.seen).join("; "));
  const shown = verdicts.filter((v) => v.status === worst.status);
  return { status: worst.status, seen: shown.map((v) => v.seen).join("; "), fix: shown.map((v) => v.fix).filter(Boolean).join("; ") || null };
}
