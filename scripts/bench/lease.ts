/**
 * Per-call sandbox leases (issue 39 point 6): what a lease costs. A TypeScript plugin with a
 * "dynamic" gate and a declared sandbox, its calls made three ways in the same run: without a
 * lease (served by its own host), the first call under a lease (the leased host's start:
 * launcher, runtime, handshake, start) and warm calls under that lease (its pooled host). Each
 * call pays its gate; the permission is "once", answered at once.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Context, type Figures, scaled } from "./context.ts";
import { median, now } from "./measure.ts";

const CODE = `export default {
  start() {},
  stop() {},
  gate(_tool, args) { return { display: "write", ...(args.lease ? { sandbox: args.lease } : {}) }; },
  invoke() { return { success: true, output: { content: "ok" } }; },
};`;

export async function leaseSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const Session = ctx.builds[0]!.Session;
  const base = join(ws.stateDir, "..", "lease");
  const folder = join(base, "leaser");
  const cwd = join(base, "project");
  mkdirSync(folder, { recursive: true });
  mkdirSync(join(cwd, "out"), { recursive: true });
  writeFileSync(join(cwd, "out/report.md"), "");
  writeFileSync(join(folder, "leaser.js"), CODE);
  writeFileSync(join(folder, "leaser.plugin.json"), JSON.stringify({ pluginContract: 4, name: "leaser", version: "1.0.0", tools: [{ name: "write", gated: "dynamic" }], sandbox: { fs: { write: ["${project}/out"] }, net: "none" } }));
  {
    await using session = await Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, cwd, confirmTrust: null, reap: false });
    await session.approve(folder, { hash: session.inspect(folder).loadSet.hash });
  }
  const lease = { fs: { write: ["${project}/out/report.md"] } };
  const first: number[] = [];
  const warm = { plain: [] as number[], leased: [] as number[] };
  const calls = scaled(ctx, 500, 100);
  for (let i = 0; i < scaled(ctx, 8, 2); i++) {
    await using session = await Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, cwd, confirmTrust: null, reap: false, permission: "once" });
    const plugin = await session.load(folder);
    for (let n = 0; n < 50; n++) await plugin.invoke("write", {});
    let t = now();
    await plugin.invoke("write", { lease });
    first.push(now() - t);
    for (let n = 0; n < 50; n++) await plugin.invoke("write", { lease });
    const times = { plain: [] as number[], leased: [] as number[] };
    for (let n = 0; n < calls; n++) {
      // Interleaved, so both meet the same machine.
      for (const which of n % 2 ? (["plain", "leased"] as const) : (["leased", "plain"] as const)) {
        t = now();
        await plugin.invoke("write", which === "leased" ? { lease } : {});
        times[which].push(now() - t);
      }
    }
    warm.plain.push(median(times.plain) * 1000);
    warm.leased.push(median(times.leased) * 1000);
  }
  fig["lease.first_ms"] = median(first);
  fig["lease.warm.plain_us"] = median(warm.plain);
  fig["lease.warm.leased_us"] = median(warm.leased);
  const spread = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}/${median(xs).toFixed(digits)}/${Math.max(...xs).toFixed(digits)}`;
  ctx.log(`lease: first call under a lease (its host's start) ${spread(first, 1)} ms min/median/max; warm call median ${spread(warm.plain, 1)} µs without, ${spread(warm.leased, 1)} µs under a lease`);
}
