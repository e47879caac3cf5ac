/**
 * The C limit (c-limit.c), built with cc from the project's own source at bench time, and run as a
 * program of its own for each measurement.
 */
import { join } from "node:path";

export interface CLimitResult {
  calls: number;
  wall_us: number;
  parent_cpu_us: number;
  child_cpu_us: number;
  mean_us?: number;
  median_us?: number;
  p99_us?: number;
}

export function buildCLimit(outDir: string): string {
  const binary = join(outDir, "c-limit");
  const cc = process.env.CC ?? "cc";
  const p = Bun.spawnSync([cc, "-O2", "-o", binary, join(import.meta.dir, "c-limit.c"), "-ldl"], { stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`building the C limit failed: ${p.stderr.toString()}`);
  return binary;
}

/** Runs the C limit; `spinUs` > 0 makes both sides poll that long before each blocking read. */
export async function runCLimit(binary: string, args: (string | number)[], spinUs = 0): Promise<CLimitResult> {
  const proc = Bun.spawn([binary, ...args.map(String)], { stdout: "pipe", stderr: "inherit", env: { ...process.env, C_LIMIT_SPIN_US: String(spinUs) } });
  const text = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`c-limit ${args.join(" ")} failed`);
  return JSON.parse(text) as CLimitResult;
}

/** CPU-bound competitors, one per core, for the contended variant. Returns a function that ends them. */
export function startBurners(binary: string, count: number): () => Promise<void> {
  const procs = Array.from({ length: count }, () => Bun.spawn([binary, "burn"], { stdout: "ignore", stderr: "inherit" }));
  return async () => {
    for (const p of procs) p.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.exited));
  };
}
