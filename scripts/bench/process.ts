/**
 * A Cortex process plugin's call (issue 43): the example's shell_word_count through cxagent (one
 * process per call: spawned in a session of its own, recorded, its output read and checked), and
 * the same script spawned by Bun alone with the same stdin line, the baseline, and the same tool
 * confined by `[cxagent.sandbox] net = "none"` (each call's process through the sandbox launcher:
 * one more Bun start per call), in interleaved rounds.
 */
import { appendFileSync, cpSync } from "node:fs";
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
  const sandboxed = join(ws.stateDir, "..", "cortex-process-confined");
  cpSync(folder, sandboxed, { recursive: true });
  appendFileSync(join(sandboxed, "manifest.toml"), '\n[cxagent.sandbox]\nnet = "none"\n');
  // A session of its own: the copy has the example's name.
  await using confinedSession = await ctx.builds[0]!.Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: async () => true, reap: false });
  const confinedPlugin = await confinedSession.load(sandboxed);
  if (confinedPlugin.sandboxLayers === null) throw new Error("the confined process plugin came up unconfined");
  const direct = async () => {
    const child = Bun.spawn([join(folder, "tools.sh"), "count"], { stdin: "pipe", stdout: "pipe", stderr: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    child.stdin.write(LINE);
    await child.stdin.end();
    await new Response(child.stdout).text();
    await child.exited;
  };
  const through = () => plugin.invoke("shell_word_count", { text: "one two three" });
  const confined = () => confinedPlugin.invoke("shell_word_count", { text: "one two three" });
  const cx: number[] = [];
  const bare: number[] = [];
  const boxed: number[] = [];
  for (let round = 0; round < ctx.rounds; round++) {
    const series = [[cx, through], [bare, direct], [boxed, confined]] as const;
    // Each round starts with another of the three, so none always meets the machine just after the same one.
    for (const [list, call] of [...series.slice(round % 3), ...series.slice(0, round % 3)]) {
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
  fig["process.confined_call_ms"] = median(boxed);
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(1)}/${median(xs).toFixed(1)}/${Math.max(...xs).toFixed(1)}`;
  ctx.log(`  process tool: ${median(cx).toFixed(1)} ms a call; the script alone: ${median(bare).toFixed(1)} ms; confined ([cxagent.sandbox]): ${median(boxed).toFixed(1)} ms`);
  ctx.log(`    min/median/max of the rounds' medians (ms): cxagent ${spread(cx)}, alone ${spread(bare)}, confined ${spread(boxed)}`);
}
