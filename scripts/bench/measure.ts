/**
 * How the benchmark measures: call loops (one at a time, or a fixed number in flight), CPU time of
 * this process and of children, memory, and the statistics reported.
 */
import { readdirSync, readFileSync } from "node:fs";

export const now = () => performance.now();

export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}
/**
 * The median; of an even number of values, the mean of the middle two (the upper one, as before
 * 2026-12-05, favoured whichever way is "better" for the figure).
 */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const half = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[half]! : (s[half - 1]! + s[half]!) / 2;
}
export const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Adds one sample of `key` to a section's samples (sectionFigures reads them). */
export function sampleAdder(samples: Map<string, number[]>): (key: string, value: number) => void {
  return (key, value) => {
    const list = samples.get(key);
    if (list) list.push(value);
    else samples.set(key, [value]);
  };
}

/**
 * A section's figures from its per-round samples: the median of each key over the rounds, and for
 * each figure of a build that was also measured with its spin off ("<build>-spin0"), the median
 * over the rounds of the two builds' ratio within the round, as "<key with the build's name
 * replaced by <build>/spin0>": the two ran with fresh processes in the same round (one after the
 * other; in the contended sections, together in turns, each group a sample), so a ratio taken
 * within a round leaves out what the machine did between rounds. It is the figure the "no worse
 * than spin off" targets read (targets.ts). `kept`, when given, gets a copy of every sample.
 */
export function sectionFigures(samples: ReadonlyMap<string, readonly number[]>, into: Record<string, number>, prefix = "", kept?: Record<string, number[]>): void {
  for (const [key, values] of samples) {
    into[prefix + key] = median(values);
    if (kept) kept[prefix + key] = [...values];
    const m = /^(.*?)\.([^.]+)-spin0\.([^.]+)$/.exec(key);
    const mine = m && samples.get(`${m[1]}.${m[2]}.${m[3]}`);
    if (!m || !mine || mine.length !== values.length) continue;
    into[`${prefix}${m[1]}.${m[2]}/spin0.${m[3]}`] = median(mine.map((x, i) => x / values[i]!));
  }
}

/**
 * The contenders in round `round`'s order: as given in even rounds, reversed in odd ones, so a
 * drift of the machine within a round (a competitor's share, a neighbour's load) favours none.
 */
export const inTurn = <T>(list: readonly T[], round: number): readonly T[] => (round % 2 ? [...list].reverse() : list);

export type Call = (i: number) => Promise<unknown>;

/**
 * CPU time used so far, in µs: this process (getrusage, all threads) and each thread of the given
 * children (the run time in /proc/<pid>/task/<tid>/schedstat), by "pid/tid".
 */
export interface CpuSample {
  parent: number;
  threads: Map<string, number>;
}

function addThreads(pid: number, into: Map<string, number>) {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const task of tasks) {
    try {
      into.set(`${pid}/${task}`, Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]) / 1000);
    } catch {
      // the thread ended between the listing and the read
    }
  }
}

export function cpuSample(pids: readonly number[]): CpuSample {
  const u = process.cpuUsage();
  const threads = new Map<string, number>();
  for (const pid of pids) addThreads(pid, threads);
  return { parent: u.user + u.system, threads };
}

/**
 * CPU used between two samples, in µs per call. A child's CPU is the sum over the threads alive at
 * the end of what each ran since the first sample (all of it, for a thread that is new); a thread
 * that ended in between is missed, but never makes the sum go down.
 */
export function cpuPerCall(before: CpuSample, after: CpuSample, calls: number) {
  let children = 0;
  for (const [tid, ran] of after.threads) children += Math.max(0, ran - (before.threads.get(tid) ?? 0));
  return { parent: (after.parent - before.parent) / calls, children: children / calls };
}

export interface SequentialResult {
  meanUs: number;
  medianUs: number;
  p99Us: number;
  parentCpuUs: number;
  childCpuUs: number;
}

/** `n` calls one after another, after `warmup` calls; per-call times and CPU per call. */
export async function sequential(call: Call, n: number, pids: readonly number[], warmup = 300): Promise<SequentialResult> {
  for (let i = 0; i < warmup; i++) await call(i);
  const times = new Float64Array(n);
  const before = cpuSample(pids);
  const began = now();
  for (let i = 0; i < n; i++) {
    const t = now();
    await call(i);
    times[i] = now() - t;
  }
  const wall = now() - began;
  const cpu = cpuPerCall(before, cpuSample(pids), n);
  const list = Array.from(times);
  return { meanUs: (wall * 1000) / n, medianUs: median(list) * 1000, p99Us: quantile(list, 0.99) * 1000, parentCpuUs: cpu.parent, childCpuUs: cpu.children };
}

/** One contender of those measured together by `alternating`: a turn makes `n` calls. */
export interface Turns {
  turn(n: number): Promise<void>;
  /** The processes that serve it (their CPU is counted as its host's). */
  pids: readonly number[];
}

/**
 * Contenders open at the same time, measured in turns of `block` calls each until every one made
 * `total`: the first goes first in even turns, last in odd ones. Each is timed over its own turns
 * only, so all of them meet the same moments of a machine whose share for them changes from one
 * millisecond to the next. Per contender: the time its turns took, ms; its host's CPU per call
 * over the whole window, µs (a host idles while another's turn runs), and this process's during
 * its turns.
 */
export async function alternating(parts: readonly Turns[], total: number, block: number) {
  const done = parts.map(() => ({ ms: 0, parentCpuUs: 0, calls: 0 }));
  const before = parts.map((p) => cpuSample(p.pids));
  for (let turn = 0; done.some((d) => d.calls < total); turn++) {
    for (const k of inTurn(parts.map((_, i) => i), turn)) {
      const d = done[k]!;
      const n = Math.min(block, total - d.calls);
      if (n <= 0) continue;
      const cpu = process.cpuUsage();
      const t = now();
      await parts[k]!.turn(n);
      d.ms += now() - t;
      const used = process.cpuUsage(cpu);
      d.parentCpuUs += used.user + used.system;
      d.calls += n;
    }
  }
  return done.map((d, k) => ({ ms: d.ms, parentCpuUs: d.parentCpuUs / total, hostCpuUs: cpuPerCall(before[k]!, cpuSample(parts[k]!.pids), total).children }));
}

export interface ThroughputResult {
  callsPerSec: number;
  parentCpuUs: number;
  childCpuUs: number;
}

/** `total` calls with `width` of them in flight at all times. */
export async function inFlight(call: Call, total: number, width: number, pids: readonly number[], warmup = 300): Promise<ThroughputResult> {
  for (let i = 0; i < warmup; i++) await call(i);
  const before = cpuSample(pids);
  const began = now();
  await inFlightCalls(call, total, width);
  const seconds = (now() - began) / 1000;
  const cpu = cpuPerCall(before, cpuSample(pids), total);
  return { callsPerSec: total / seconds, parentCpuUs: cpu.parent, childCpuUs: cpu.children };
}

/** `total` calls with `width` of them in flight until the last ones. */
export async function inFlightCalls(call: Call, total: number, width: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, total) }, async () => {
      while (next < total) await call(next++);
    }),
  );
}

/** Resident and proportional memory of a process, in KiB. */
export function memoryOf(pid: number): { rss: number; pss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  let pss = NaN;
  let anon = NaN;
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(rollup)?.[1] ?? NaN);
    pss = kib("Pss");
    // Its share of anonymous memory (heap, stacks): not the executable's pages, which are page cache.
    anon = kib("Pss_Anon");
  } catch {
    // no smaps_rollup on this kernel
  }
  return { rss, pss, anon };
}
