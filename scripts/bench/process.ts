/**
 * A Cortex process plugin's call (issue 43): the example's shell_word_count through cxagent (one
 * process per call: spawned in a session of its own, recorded, its output read and checked), and
 * the same script spawned by Bun alone with the same stdin line, the baseline, in interleaved rounds.
 */
import { join } from "node:path";
import type { Context, Figures } from "./context.ts";
import { median, now } from "./measure.ts";
import { ROOT } from "./setup.ts";

const LINE = '{"tool":"shell_word_count","input":{"text":"one two three"}}\n';

export async function processSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const folder = join(ROOT, "examples/cortex-process");
  const n = ctx.quick ? 10 : 40;
  await using session = await ctx.builds[0]!.Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: async () => true, reap: false });
  const plugin = await session.load(folder);
  const direct = async () => {
    const child = Bun.spawn([join(folder, "tools.sh"), "count"], { stdin: "pipe", stdout: "pipe", stderr: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    child.stdin.write(LINE);
    await child.stdin.end();
    await new Response(child.stdout).text();
    await child.exited;
  };
  const through = () => plugin.invoke("shell_word_count", { text: "one two three" });
  const cx: number[] = [];
  const bare: number[] = [];
  for (let round = 0; round < ctx.rounds; round++) {
    for (const [list, call] of round % 2 ? ([[bare, direct], [cx, through]] as const) : ([[cx, through], [bare, direct]] as const)) {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const at = now();
        await call();
        times.push(now() - at);
      }
      list.push(median(times));
    }
  }
  fig["process.call_ms"] = median(cx);
  fig["process.bare_ms"] = median(bare);
  ctx.log(`  process tool: ${median(cx).toFixed(1)} ms a call; the script alone: ${median(bare).toFixed(1)} ms`);
}
