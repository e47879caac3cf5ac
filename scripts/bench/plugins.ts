/**
 * Many plugins busy at once: 1, 8 and 32 plugins (separate processes), one call in flight on each,
 * aggregate calls/s and CPU per call — cxagent (as built and with its spin off), the floor, the MCP
 * peer and the C limit. Then the idle cost: 32 loaded plugin hosts left alone.
 */
import { cpus } from "node:os";
import { runCLimit, startBurners } from "./c-limit.ts";
import { type Contender, cxagent, floor, mcp } from "./contenders.ts";
import { type Context, cxagentVariants, type Figures, scaled } from "./context.ts";
import { alternating, cpuPerCall, cpuSample, inTurn, median, now, sampleAdder, sectionFigures } from "./measure.ts";

export const COUNTS = [1, 8, 32] as const;

/** Keeps one call in flight on every endpoint until `total` calls are done. */
async function busy(c: Contender, tools: string[], total: number) {
  let next = 0;
  await Promise.all(
    c.endpoints.map(async (e, k) => {
      while (next < total) await e.call(tools[k]!, { i: next++ });
    }),
  );
}

export async function pluginsSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const total = scaled(ctx, 24_000, 3000);
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  for (let round = 0; round < ctx.rounds; round++) {
    for (const n of COUNTS) {
      const tools = ws.many.slice(0, n).map((_, i) => `noop_${i}`);
      const makers: { name: string; open: () => Promise<Contender>; tools: string[]; total: number }[] = [
        ...cxagentVariants(ctx).map((v) => ({ name: v.name, open: () => cxagent(v.Session, folders, ws.many.slice(0, n), v.env), tools, total })),
      ];
      const libraries = Array.from({ length: n }, () => ws.noop.library);
      makers.push({ name: "floor", open: () => floor(libraries), tools: libraries.map(() => "noop"), total });
      makers.push({ name: "mcp", open: () => mcp(libraries, ["noop"]), tools: libraries.map(() => "noop"), total: Math.round(total / 3) });
      for (const m of inTurn(makers, round)) {
        const c = await m.open();
        try {
          await busy(c, m.tools, n * 50); // warm-up
          const before = cpuSample(c.pids);
          const began = now();
          await busy(c, m.tools, m.total);
          const seconds = (now() - began) / 1000;
          const cpu = cpuPerCall(before, cpuSample(c.pids), m.total);
          add(`plugins.${n}.${m.name}.calls_s`, m.total / seconds);
          add(`plugins.${n}.${m.name}.cpu_parent_us`, cpu.parent);
          add(`plugins.${n}.${m.name}.cpu_host_us`, cpu.children);
        } finally {
          await c.close();
        }
      }
      await cLimitBusy(ws.cLimit, ws.noop.library, add, total * 4, n);
    }
    const last = COUNTS[COUNTS.length - 1];
    ctx.log(`  plugins round ${round + 1}/${ctx.rounds}: ${last} busy, cxagent ${median(samples.get(`plugins.${last}.cxagent.calls_s`)!).toFixed(0)}/s, spin off ${median(samples.get(`plugins.${last}.cxagent-spin0.calls_s`)!).toFixed(0)}/s`);
  }
  sectionFigures(samples, fig, "", ctx.samples);
}

/** The C limit with `n` children busy at once, `calls` in all: plugins.<n>.c.* */
async function cLimitBusy(binary: string, library: string, add: (key: string, value: number) => void, calls: number, n: number) {
  const r = await runCLimit(binary, [library, "multi", calls, n]);
  add(`plugins.${n}.c.calls_s`, r.calls / (r.wall_us / 1e6));
  add(`plugins.${n}.c.cpu_parent_us`, r.parent_cpu_us / r.calls);
  add(`plugins.${n}.c.cpu_host_us`, r.child_cpu_us / r.calls);
}

/**
 * 32 plugins busy beside a CPU-bound competitor on every core, cxagent's two builds and the C
 * limit: as in calls.ts's contended variant, both builds are open at once (32 fresh hosts each,
 * every round) and their calls alternate in turns of 4 per plugin (measure.ts alternating).
 */
export async function contendedPluginsSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const n = ws.many.length;
  const tools = ws.many.map((_, i) => `noop_${i}`);
  const total = scaled(ctx, 9000, 900);
  const rounds = scaled(ctx, 12, 2);
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  const stop = startBurners(ws.cLimit, cpus().length);
  try {
    for (let round = 0; round < rounds; round++) {
      const opened: { name: string; c: Contender }[] = [];
      try {
        for (const v of inTurn(cxagentVariants(ctx), round)) opened.push({ name: v.name, c: await cxagent(v.Session, folders, ws.many, v.env) });
        for (const { c } of opened) await busy(c, tools, n * 50); // warm-up
        const r = await alternating(
          opened.map(({ c }) => ({ pids: c.pids, turn: (calls: number) => busy(c, tools, calls) })),
          total,
          n * 4,
        );
        opened.forEach(({ name }, k) => {
          add(`plugins.${n}.${name}.calls_s`, total / (r[k]!.ms / 1000));
          add(`plugins.${n}.${name}.cpu_parent_us`, r[k]!.parentCpuUs);
          add(`plugins.${n}.${name}.cpu_host_us`, r[k]!.hostCpuUs);
        });
      } finally {
        for (const o of opened) await o.c.close();
      }
      await cLimitBusy(ws.cLimit, ws.noop.library, add, total * 4, n);
      ctx.log(`  contended plugins round ${round + 1}/${rounds}: ${n} busy, cxagent ${median(samples.get(`plugins.${n}.cxagent.calls_s`)!).toFixed(0)}/s, spin off ${median(samples.get(`plugins.${n}.cxagent-spin0.calls_s`)!).toFixed(0)}/s`);
    }
  } finally {
    await stop();
  }
  sectionFigures(samples, fig, "contended.", ctx.samples);
}

/** 32 plugin hosts loaded and left idle: the CPU they (and the parent) use over 10 s. */
export async function idleSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const c = await cxagent(ctx.builds[0]!.Session, { stateDir: ws.stateDir, configDir: ws.configDir }, ws.many);
  try {
    await busy(c, ws.many.map((_, i) => `noop_${i}`), 32 * 20);
    await Bun.sleep(500); // the last replies' spin and wake-ups are over
    const seconds = scaled(ctx, 10, 1);
    const before = cpuSample(c.pids);
    await Bun.sleep(seconds * 1000);
    const used = cpuPerCall(before, cpuSample(c.pids), 1); // µs over the whole idle time
    fig["idle.hosts_cpu_pct"] = (used.children / (seconds * 1e6)) * 100;
    fig["idle.per_host_cpu_pct"] = fig["idle.hosts_cpu_pct"] / c.pids.length;
    fig["idle.parent_cpu_pct"] = (used.parent / (seconds * 1e6)) * 100;
    fig["idle.seconds"] = seconds;
  } finally {
    await c.close();
  }
}
