/**
 * Big payloads: replies of 1 KiB … 16 MiB (tool `reply`) and requests of the same sizes (tool
 * `take`), one call at a time, through cxagent, the floor, the MCP peer and the C limit.
 * Throughput is the payload's size over the mean time per call.
 */
import { runCLimit } from "./c-limit.ts";
import { type Contender, cxagent, floor, mcp } from "./contenders.ts";
import type { Context, Figures } from "./context.ts";
import { median, sampleAdder, sequential } from "./measure.ts";

export const SIZES = [
  { label: "1k", bytes: 1024, calls: 2000, quick: 200 },
  { label: "64k", bytes: 64 * 1024, calls: 300, quick: 30 },
  { label: "1m", bytes: 1 << 20, calls: 40, quick: 6 },
  { label: "16m", bytes: 16 << 20, calls: 5, quick: 2 },
] as const;

export async function payloadSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const opened: { name: string; c: Contender; share: number }[] = [];
  for (const b of ctx.builds) opened.push({ name: b.name, c: await cxagent(b.Session, folders, [ws.payload.folder]), share: 1 });
  opened.push({ name: "floor", c: await floor([ws.payload.library]), share: 1 });
  opened.push({ name: "mcp", c: await mcp([ws.payload.library], ["reply", "take"]), share: 0.25 });
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  try {
    for (let round = 0; round < ctx.rounds; round++) {
      for (const size of SIZES) {
        const n = ctx.quick ? size.quick : size.calls;
        const data = "a".repeat(size.bytes);
        for (const kind of ["reply", "request"] as const) {
          const key = `payload.${kind}.${size.label}`;
          for (const { name, c, share } of opened) {
            const e = c.endpoints[0]!;
            const call = kind === "reply" ? () => e.call("reply", { bytes: size.bytes }) : () => e.call("take", { data });
            const calls = Math.max(2, Math.round(n * share));
            const s = await sequential(call, calls, c.pids, Math.min(calls, 20));
            add(`${key}.${name}.mean_us`, s.meanUs);
            add(`${key}.${name}.cpu_parent_us`, s.parentCpuUs);
            add(`${key}.${name}.cpu_host_us`, s.childCpuUs);
          }
          const r = await runCLimit(ws.cLimit, [ws.payload.library, "seq", Math.max(n, 5) * 4, `${kind}:${size.bytes}`]);
          add(`${key}.c.mean_us`, r.mean_us!);
          add(`${key}.c.cpu_parent_us`, r.parent_cpu_us / r.calls);
          add(`${key}.c.cpu_host_us`, r.child_cpu_us / r.calls);
        }
      }
      ctx.log(`  payload round ${round + 1}/${ctx.rounds}: 1 MiB reply cxagent ${median(samples.get("payload.reply.1m.cxagent.mean_us")!).toFixed(0)} µs, C ${median(samples.get("payload.reply.1m.c.mean_us")!).toFixed(0)} µs`);
    }
  } finally {
    for (const o of opened) await o.c.close();
  }
  for (const [key, values] of samples) fig[key] = median(values);
  for (const size of SIZES) {
    for (const kind of ["reply", "request"]) {
      for (const name of [...ctx.builds.map((b) => b.name), "floor", "mcp", "c"]) {
        const meanUs = fig[`payload.${kind}.${size.label}.${name}.mean_us`];
        if (meanUs) fig[`payload.${kind}.${size.label}.${name}.mb_s`] = size.bytes / meanUs; // bytes per µs = MB/s
      }
    }
  }
}
