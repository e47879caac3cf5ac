/**
 * Call latency, throughput and CPU per call with the trivial tool: cxagent (as built, and with its
 * spin off), the same tool as a TypeScript plugin ("cxagent-ts"), the floor, the MCP peer and the
 * C limit, one at a time and at 16, 64 and 256 in flight, in interleaved rounds. The contended variant repeats it beside a CPU-bound competitor
 * on each core.
 */
import { cpus } from "node:os";
import { runCLimit, startBurners } from "./c-limit.ts";
import { type Contender, cxagent, floor, mcp } from "./contenders.ts";
import { type Context, cxagentVariants, type Figures, scaled } from "./context.ts";
import { inFlight, inTurn, median, sectionFigures, sequential } from "./measure.ts";

export const WIDTHS = [16, 64, 256] as const;

export async function callSection(ctx: Context, fig: Figures, options: { prefix?: string; withPeers?: boolean; widths?: readonly number[]; split?: number } = {}) {
  const prefix = options.prefix ?? "";
  // `split` rounds of 1/split the calls each, for the same time in all: more alternations of the contenders.
  const split = options.split ?? 1;
  const rounds = ctx.rounds * split;
  const share = (n: number) => Math.max(100, Math.round(n / split));
  const widths = options.widths ?? WIDTHS;
  const withPeers = options.withPeers ?? true;
  const { ws } = ctx;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  const seqN = share(scaled(ctx, 5000, 500));
  const flightN = share(scaled(ctx, 30_000, 3000));
  const makers: { name: string; open: () => Promise<Contender>; seqN: number; flightN: number }[] = [];
  for (const v of cxagentVariants(ctx)) makers.push({ name: v.name, open: () => cxagent(v.Session, folders, [ws.noop.folder], v.env), seqN, flightN });
  if (withPeers) {
    // A TypeScript plugin is served on its host's event loop, not the shim's threads: no spin variant.
    makers.push({ name: "cxagent-ts", open: () => cxagent(ctx.builds[0]!.Session, folders, [ws.noopModule]), seqN, flightN });
    makers.push({ name: "floor", open: () => floor([ws.noop.library]), seqN, flightN });
    makers.push({ name: "mcp", open: () => mcp([ws.noop.library], ["noop"]), seqN: share(scaled(ctx, 2000, 200)), flightN: share(scaled(ctx, 10_000, 1000)) });
  }
  const samples = new Map<string, number[]>();
  const add = (key: string, value: number) => {
    const list = samples.get(key) ?? [];
    list.push(value);
    samples.set(key, list);
  };
  for (let round = 0; round < rounds; round++) {
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
        for (const width of widths) {
          const t = await inFlight(call, flightN, width, c.pids);
          add(`w${width}.${name}.calls_s`, t.callsPerSec);
          add(`w${width}.${name}.cpu_parent_us`, t.parentCpuUs);
          add(`w${width}.${name}.cpu_host_us`, t.childCpuUs);
        }
      }
      // The C limit as the issue defines it (both sides block in read), and beside it the same pair
      // spinning up to 100 µs before each read: what the machine's wake-ups cost.
      for (const [name, spinUs] of [["c", 0], ["c-spin", 100]] as const) {
        const seq = await runCLimit(ws.cLimit, [ws.noop.library, "seq", share(scaled(ctx, 20_000, 2000))], spinUs);
        add(`seq.${name}.mean_us`, seq.mean_us!);
        add(`seq.${name}.median_us`, seq.median_us!);
        add(`seq.${name}.p99_us`, seq.p99_us!);
        add(`seq.${name}.cpu_parent_us`, seq.parent_cpu_us / seq.calls);
        add(`seq.${name}.cpu_host_us`, seq.child_cpu_us / seq.calls);
        add(`w1.${name}.calls_s`, 1e6 / seq.mean_us!);
        for (const width of widths) {
          const w = await runCLimit(ws.cLimit, [ws.noop.library, "window", share(scaled(ctx, 100_000, 10_000)), width], spinUs);
          add(`w${width}.${name}.calls_s`, w.calls / (w.wall_us / 1e6));
          add(`w${width}.${name}.cpu_parent_us`, w.parent_cpu_us / w.calls);
          add(`w${width}.${name}.cpu_host_us`, w.child_cpu_us / w.calls);
        }
      }
    } finally {
      for (const o of opened) await o.c.close();
    }
    ctx.log(`  ${prefix || "quiet "}round ${round + 1}/${rounds}: seq mean cxagent ${median(samples.get("seq.cxagent.mean_us")!).toFixed(1)} µs, C ${median(samples.get("seq.c.mean_us")!).toFixed(1)} µs`);
  }
  sectionFigures(samples, fig, prefix);
}

/** The same, with a CPU-bound competitor on every core (cxagent and the C limit only). */
export async function contendedCallSection(ctx: Context, fig: Figures) {
  const stop = startBurners(ctx.ws.cLimit, cpus().length);
  try {
    // Beside a competitor on every core a process falls into slow spells lasting seconds (its
    // calls 5-10x slower, in either build): eight times the rounds, each an eighth as long, each
    // with fresh processes, so a spell weighs one sample of many (an even number of rounds: each
    // contender starts first in half of them).
    await callSection(ctx, fig, { prefix: "contended.", withPeers: false, widths: [16], split: 8 });
  } finally {
    await stop();
  }
}
