/**
 * Memory: an idle plugin host against a bare Bun child; then a soak — a million calls (a rotation
 * of good and malformed replies through test/fixtures/invoke-replies.c, 8 in flight) — with the
 * host's and the parent's resident memory after warm-up and at the end, and the fixture's count of
 * strings returned and freed. Also crash detection: a segfault in invoke until the failed result.
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

const ROTATION = ["good", "invalid_json", "number", "no_ok", "good", "null_pointer", "json_null", "good", "failed_with_error", "empty_string"];

export async function soakSection(ctx: Context, fig: Figures, calls?: number) {
  const { ws } = ctx;
  const frees = join(ws.work, `frees-${Date.now()}`);
  const env = { CXAGENT_FX_FREE_LOG: frees, CXAGENT_FX_FREE_LOG_EVERY: "10000" };
  await using session = await ctx.builds[0]!.Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: null, reap: false, env });
  const plugin = await session.load(ws.invokeReplies);
  const total = calls ?? scaled(ctx, 1_000_000, 20_000);
  const warm = Math.min(50_000, total / 10);
  let done = 0;
  let failures = 0;
  let warmHost = 0;
  let warmParent = 0;
  const parentRss = () => {
    Bun.gc(true);
    return process.memoryUsage().rss / 1024;
  };
  const t = now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (done < total) {
        const i = done++;
        try {
          await plugin.invoke(ROTATION[i % ROTATION.length]!, { i });
        } catch (error) {
          if (!(error instanceof CxError)) throw error;
          failures++;
        }
        if (i === warm) {
          warmHost = memoryOf(plugin.pid!).rss;
          warmParent = parentRss();
        }
      }
    }),
  );
  const seconds = (now() - t) / 1000;
  const endHost = memoryOf(plugin.pid!).rss;
  const endParent = parentRss();
  await session.unload(plugin.name);
  const [returned, freed] = readFileSync(frees, "utf8").trim().split(" ").map(Number);
  fig["soak.calls"] = total;
  fig["soak.calls_s"] = total / seconds;
  fig["soak.malformed"] = failures;
  fig["soak.host_rss_warm_kib"] = warmHost;
  fig["soak.host_rss_end_kib"] = endHost;
  fig["soak.host_growth_pct"] = ((endHost - warmHost) / warmHost) * 100;
  fig["soak.parent_rss_warm_kib"] = warmParent;
  fig["soak.parent_rss_end_kib"] = endParent;
  fig["soak.parent_growth_pct"] = ((endParent - warmParent) / warmParent) * 100;
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
