/**
 * Call latency, throughput and CPU per call with the trivial tool: cxagent (as built, and with its
 * spin off), the same tool as a TypeScript plugin ("cxagent-ts"), the floor, the MCP peer and the
 * C limit, one at a time and at 16, 64 and 256 in flight, in interleaved rounds. The contended
 * variant measures cxagent's two builds and the C limit beside a CPU-bound competitor on each core.
 */
import { cpus } from "node:os";
import { runCLimit, startBurners } from "./c-limit.ts";
import { type Contender, cxagent, floor, mcp } from "./contenders.ts";
import { type Context, cxagentVariants, type Figures, scaled } from "./context.ts";
import { alternating, inFlight, inFlightCalls, inTurn, median, now, quantile, sampleAdder, sectionFigures, sequential } from "./measure.ts";

export const WIDTHS = [16, 64, 256] as const;

export async function callSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const seqN = scaled(ctx, 5000, 500);
  const flightN = scaled(ctx, 30_000, 3000);
  const makers: { name: string; open: () => Promise<Contender>; seqN: number; flightN: number }[] = [];
  for (const v of cxagentVariants(ctx)) makers.push({ name: v.name, open: () => cxagent(v.Session, folders, [ws.noop.folder], v.env), seqN, flightN });
  // A TypeScript plugin is served on its host's event loop, not the shim's threads: no spin variant.
  makers.push({ name: "cxagent-ts", open: () => cxagent(ctx.builds[0]!.Session, folders, [ws.noopModule]), seqN, flightN });
  makers.push({ name: "floor", open: () => floor([ws.noop.library]), seqN, flightN });
  makers.push({ name: "mcp", open: () => mcp([ws.noop.library], ["noop"]), seqN: scaled(ctx, 2000, 200), flightN: scaled(ctx, 10_000, 1000) });
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  for (let round = 0; round < ctx.rounds; round++) {
    // Fresh processes every round, started and measured in the round's order: the scheduler keeps
    // a process's history across its sleeps (EEVDF's lag), and with a competitor on every core the
    // host started first ran 0.5-0.6x the one started second, whichever build it was.
    const opened: { name: string; c: Contender; seqN: number; flightN: number }[] = [];
    try {
      for (const m of inTurn(makers, round)) opened.push({ ...m, c: await m.open() });
      for (const { name, c, seqN, flightN } of opened) {
        const e = c.endpoints[0]!;
        const call = (i: number) => e.call("noop", { i });
        const s = await sequential(call, seqN, c.pids);
        add(`seq.${name}.mean_us`, s.meanUs);
        add(`seq.${name}.median_us`, s.medianUs);
        add(`seq.${name}.p99_us`, s.p99Us);
        add(`seq.${name}.cpu_parent_us`, s.parentCpuUs);
        add(`seq.${name}.cpu_host_us`, s.childCpuUs);
        add(`w1.${name}.calls_s`, 1e6 / s.meanUs);
        for (const width of WIDTHS) {
          const t = await inFlight(call, flightN, width, c.pids);
          add(`w${width}.${name}.calls_s`, t.callsPerSec);
          add(`w${width}.${name}.cpu_parent_us`, t.parentCpuUs);
          add(`w${width}.${name}.cpu_host_us`, t.childCpuUs);
        }
      }
      await cLimitCalls(ws.cLimit, ws.noop.library, add, scaled(ctx, 20_000, 2000), scaled(ctx, 100_000, 10_000), WIDTHS);
    } finally {
      for (const o of opened) await o.c.close();
    }
    ctx.log(`  round ${round + 1}/${ctx.rounds}: seq mean cxagent ${median(samples.get("seq.cxagent.mean_us")!).toFixed(1)} µs, C ${median(samples.get("seq.c.mean_us")!).toFixed(1)} µs`);
  }
  sectionFigures(samples, fig, "", ctx.samples);
}

/**
 * The C limit as the issue defines it (both sides block in read), and beside it the same pair
 * spinning up to 100 µs before each read: what the machine's wake-ups cost.
 */
async function cLimitCalls(binary: string, library: string, add: (key: string, value: number) => void, seqN: number, windowN: number, widths: readonly number[]) {
  for (const [name, spinUs] of [["c", 0], ["c-spin", 100]] as const) {
    const seq = await runCLimit(binary, [library, "seq", seqN], spinUs);
    add(`seq.${name}.mean_us`, seq.mean_us!);
    add(`seq.${name}.median_us`, seq.median_us!);
    add(`seq.${name}.p99_us`, seq.p99_us!);
    add(`seq.${name}.cpu_parent_us`, seq.parent_cpu_us / seq.calls);
    add(`seq.${name}.cpu_host_us`, seq.child_cpu_us / seq.calls);
    add(`w1.${name}.calls_s`, 1e6 / seq.mean_us!);
    for (const width of widths) {
      const w = await runCLimit(binary, [library, "window", windowN, width], spinUs);
      add(`w${width}.${name}.calls_s`, w.calls / (w.wall_us / 1e6));
      add(`w${width}.${name}.cpu_parent_us`, w.parent_cpu_us / w.calls);
      add(`w${width}.${name}.cpu_host_us`, w.child_cpu_us / w.calls);
    }
  }
}

/**
 * The same beside a CPU-bound competitor on every core, for cxagent's builds (as built, spin off)
 * and the C limit. A process's share there swings from one millisecond to the next, and each
 * process keeps a luck of its own for its life (EEVDF's lag: a host started beside the burners ran
 * 0.5-2x as fast as its twin started next to it). So the builds are measured together: in each
 * round, groups of fresh processes, one of each build, each group's calls alternating between its
 * members in turns of a few calls (measure.ts alternating); a figure is the median over all the
 * groups of all rounds. An A/A run (--aa) checks it: built this way, two identical builds came
 * out within a few percent of each other; measured one after the other, as the quiet section
 * does, 0.85-1.13 (the medians of 24 rounds, in three runs).
 */
export async function contendedCallSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const variants = cxagentVariants(ctx);
  const rounds = scaled(ctx, 12, 2);
  const groups = scaled(ctx, 6, 2);
  const seqN = scaled(ctx, 3000, 300);
  const flightN = scaled(ctx, 12_000, 1200);
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  const stop = startBurners(ws.cLimit, cpus().length);
  try {
    for (let round = 0; round < rounds; round++) {
      for (let g = 0; g < groups; g++) {
        const opened: { name: string; c: Contender }[] = [];
        try {
          for (const v of inTurn(variants, round + g)) opened.push({ name: v.name, c: await cxagent(v.Session, folders, [ws.noop.folder], v.env) });
          const calls = opened.map(({ c }) => (i: number) => c.endpoints[0]!.call("noop", { i }));
          for (const call of calls) for (let i = 0; i < 300; i++) await call(i);
          const times = opened.map(() => [] as number[]);
          const seq = await alternating(
            opened.map(({ c }, k) => ({
              pids: c.pids,
              turn: async (n: number) => {
                for (let i = 0; i < n; i++) {
                  const t = now();
                  await calls[k]!(i);
                  times[k]!.push(now() - t);
                }
              },
            })),
            seqN,
            25,
          );
          const flight = await alternating(
            opened.map(({ c }, k) => ({ pids: c.pids, turn: (n: number) => inFlightCalls(calls[k]!, n, 16) })),
            flightN,
            400,
          );
          opened.forEach(({ name }, k) => {
            const s = seq[k]!;
            add(`seq.${name}.mean_us`, (s.ms * 1000) / seqN);
            add(`seq.${name}.median_us`, median(times[k]!) * 1000);
            add(`seq.${name}.p99_us`, quantile(times[k]!, 0.99) * 1000);
            add(`seq.${name}.cpu_parent_us`, s.parentCpuUs);
            add(`seq.${name}.cpu_host_us`, s.hostCpuUs);
            add(`w1.${name}.calls_s`, seqN / (s.ms / 1000));
            const f = flight[k]!;
            add(`w16.${name}.calls_s`, flightN / (f.ms / 1000));
            add(`w16.${name}.cpu_parent_us`, f.parentCpuUs);
            add(`w16.${name}.cpu_host_us`, f.hostCpuUs);
          });
        } finally {
          for (const o of opened) await o.c.close();
        }
      }
      await cLimitCalls(ws.cLimit, ws.noop.library, add, scaled(ctx, 5000, 500), scaled(ctx, 25_000, 2500), [16]);
      ctx.log(`  contended round ${round + 1}/${rounds}: seq mean cxagent ${median(samples.get("seq.cxagent.mean_us")!).toFixed(1)} µs, spin off ${median(samples.get("seq.cxagent-spin0.mean_us")!).toFixed(1)} µs, C ${median(samples.get("seq.c.mean_us")!).toFixed(1)} µs`);
    }
  } finally {
    await stop();
  }
  sectionFigures(samples, fig, "contended.", ctx.samples);
}
