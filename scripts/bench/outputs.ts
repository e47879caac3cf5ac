/**
 * Large results (issue 41): `cxagent invoke` of the payload plugin's `reply` for 1 MiB, 16 MiB and
 * 50 MB, into a pipe, uncapped (a pipe's default) and with `--max-output 100000` (the spill while
 * reading, a preview and a reference), and a 10-byte reply as the baseline of the same round: the
 * time until the caller has read all it gets, and the parent's peak resident memory (VmHWM, read
 * every 5 ms from /proc while it runs). Each run's figure is the median of its rounds.
 */
import { readFileSync } from "node:fs";
import type { Context, Figures } from "./context.ts";
import { median } from "./measure.ts";

export const OUTPUT_SIZES = [
  { label: "1m", bytes: 1 << 20 },
  { label: "16m", bytes: 16 << 20 },
  { label: "50mb", bytes: 50_000_000 },
] as const;

const MODES = { uncapped: [] as string[], capped: ["--max-output", "100000"] };

async function invokeOnce(ctx: Context, bytes: number, extra: string[]): Promise<{ ms: number; peakKb: number }> {
  const { ws } = ctx;
  const began = performance.now();
  const proc = Bun.spawn({
    cmd: [ws.binary, "invoke", ws.payload.folder, "reply", "--args", JSON.stringify({ bytes }), ...extra],
    env: { ...process.env, CXAGENT_STATE_DIR: ws.stateDir, CXAGENT_CONFIG_DIR: ws.configDir },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let peakKb = 0;
  const poll = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // gone
    }
  }, 5);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited]);
  const ms = performance.now() - began;
  clearInterval(poll);
  if (code !== 0) throw new Error(`invoke reply ${bytes} failed (${code}): ${err}`);
  if (extra.length === 0 && out.byteLength !== bytes + 1) throw new Error(`invoke reply ${bytes} printed ${out.byteLength} bytes`);
  if (extra.length > 0 && bytes > 100_000 && out.byteLength > 100_001) throw new Error(`invoke reply ${bytes} --max-output 100000 printed ${out.byteLength} bytes`);
  return { ms, peakKb };
}

export async function outputsSection(ctx: Context, fig: Figures) {
  const samples = new Map<string, number[]>();
  const add = (key: string, value: number) => (samples.get(key) ?? samples.set(key, []).get(key)!).push(value);
  const rounds = ctx.quick ? 1 : ctx.rounds;
  for (let round = 0; round < rounds; round++) {
    const base = await invokeOnce(ctx, 10, []);
    add("outputs.base.ms", base.ms);
    add("outputs.base.rss_mb", base.peakKb / 1024);
    for (const size of OUTPUT_SIZES) {
      for (const [mode, extra] of Object.entries(MODES)) {
        const r = await invokeOnce(ctx, size.bytes, extra);
        add(`outputs.${size.label}.${mode}.ms`, r.ms);
        add(`outputs.${size.label}.${mode}.rss_mb`, r.peakKb / 1024);
        add(`outputs.${size.label}.${mode}.rss_above_mb`, (r.peakKb - base.peakKb) / 1024);
      }
    }
    ctx.log(`  outputs round ${round + 1}/${rounds}: 50 MB uncapped ${median(samples.get("outputs.50mb.uncapped.rss_above_mb")!).toFixed(0)} MiB above the baseline, capped ${median(samples.get("outputs.50mb.capped.rss_above_mb")!).toFixed(0)} MiB`);
  }
  for (const [key, values] of samples) fig[key] = median(values);
}
