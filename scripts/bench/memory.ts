/**
 * Memory: an idle plugin host against a bare Bun child; then a soak — a million calls (a rotation
 * of good and malformed replies through test/fixtures/invoke-replies.c, 8 in flight, in a parent
 * process of its own) — with the host's and that parent's resident memory after warm-up and at
 * the end, and the fixture's count of strings returned and freed. Also crash detection: a
 * segfault in invoke until the failed result.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { type Context, type Figures, scaled } from "./context.ts";
import { median, memoryOf, now } from "./measure.ts";

export async function idleMemorySection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "bare-child.ts")], { stdin: "pipe", stdout: "pipe" });
  child.stdin.write("\n");
  child.stdin.flush();
  await child.stdout.getReader().read();
  await using session = await ctx.builds[0]!.Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: null, reap: false });
  const plugin = await session.load(ws.noop.folder);
  await plugin.invoke("noop", {});
  await Bun.sleep(300);
  const bare = memoryOf(child.pid);
  const host = memoryOf(plugin.pid!);
  child.kill();
  await child.exited;
  fig["mem.idle.bare_rss_kib"] = bare.rss;
  fig["mem.idle.bare_pss_kib"] = bare.pss;
  fig["mem.idle.host_rss_kib"] = host.rss;
  fig["mem.idle.host_pss_kib"] = host.pss;
}

/** The million-call soak, run by soak-child.ts in a process of its own (see there). */
export async function soakSection(ctx: Context, fig: Figures, calls?: number) {
  const { ws } = ctx;
  const frees = join(ws.work, `frees-${Date.now()}`);
  const total = calls ?? scaled(ctx, 1_000_000, 20_000);
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "soak-child.ts"), ws.stateDir, ws.configDir, ws.invokeReplies, String(total), frees], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error("the soak failed");
  const r = JSON.parse(out) as { calls: number; seconds: number; failures: number; warmHost: number; endHost: number; warmParent: number; endParent: number };
  const [returned, freed] = readFileSync(frees, "utf8").trim().split(" ").map(Number);
  fig["soak.calls"] = r.calls;
  fig["soak.calls_s"] = r.calls / r.seconds;
  fig["soak.malformed"] = r.failures;
  fig["soak.host_rss_warm_kib"] = r.warmHost;
  fig["soak.host_rss_end_kib"] = r.endHost;
  fig["soak.host_growth_pct"] = ((r.endHost - r.warmHost) / r.warmHost) * 100;
  fig["soak.parent_rss_warm_kib"] = r.warmParent;
  fig["soak.parent_rss_end_kib"] = r.endParent;
  fig["soak.parent_growth_pct"] = ((r.endParent - r.warmParent) / r.warmParent) * 100;
  fig["soak.returned"] = returned!;
  fig["soak.freed"] = freed!;
}

export async function crashSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const delays: number[] = [];
  for (let i = 0; i < scaled(ctx, 12, 3); i++) {
    // a session of its own each time: three crashes would quarantine the plugin
    await using session = await ctx.builds[0]!.Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: null, reap: false });
    const plugin = await session.load(ws.crash);
    const error = await plugin.invoke("segfault").catch((e: unknown) => e);
    const failedAt = performance.timeOrigin + now();
    if (!(error instanceof CxError) || error.code !== "E_CRASHED") throw new Error(`expected E_CRASHED, got ${String(error)}`);
    const stderr = (error.details?.stderr as string[] | undefined) ?? [];
    const crashedAt = Number(stderr.map((l) => /crashing at (\d+) us/.exec(l)?.[1]).find(Boolean)) / 1000;
    delays.push(failedAt - crashedAt);
  }
  fig["crash.detect_ms"] = median(delays);
  fig["crash.detect_max_ms"] = Math.max(...delays);
}
