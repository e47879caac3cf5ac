/**
 * Redaction's cost (issue 40): the same payload replies, one call at a time, through two cxagent
 * sessions of this build measured in the same rounds: one that knows no secret (nothing is
 * scanned) and one that has resolved a secret, so every reply, event and stderr line is scanned
 * for each of its forms. Both sessions serve the same library; only the redactor differs.
 */
import { cxagent } from "./contenders.ts";
import type { Context, Figures } from "./context.ts";
import { median, sampleAdder, sequential } from "./measure.ts";

export const REDACTION_SIZES = [
  { label: "1k", bytes: 1024, calls: 2000, quick: 200 },
  { label: "64k", bytes: 64 * 1024, calls: 300, quick: 30 },
  { label: "1m", bytes: 1 << 20, calls: 40, quick: 6 },
] as const;

/** What a session opened by the bench offers, when its build knows secrets at all. */
type WithSecrets = { secrets?: { redactor: { add(name: string, value: Uint8Array): void } } };

export async function redactionSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const build = ctx.builds.find((b) => b.name === "cxagent") ?? ctx.builds[0]!;
  const folders = { stateDir: ws.stateDir, configDir: ws.configDir };
  let known: WithSecrets | null = null;
  const Session = {
    open: async (options: Parameters<typeof build.Session.open>[0]) => {
      const session = await build.Session.open(options);
      known = session as unknown as WithSecrets;
      return session;
    },
  };
  const off = await cxagent(build.Session, folders, [ws.payload.folder]);
  const on = await cxagent(Session, folders, [ws.payload.folder]);
  const secrets = (known as WithSecrets | null)?.secrets;
  if (!secrets) {
    await off.close();
    await on.close();
    ctx.log("  redaction: this build has no secrets; skipped");
    return;
  }
  secrets.redactor.add("bench.token", new TextEncoder().encode("ghp_BenchS3cretValue/with+plus=0123456789"));
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  try {
    for (let round = 0; round < ctx.rounds; round++) {
      for (const size of REDACTION_SIZES) {
        const n = ctx.quick ? size.quick : size.calls;
        // alternate which goes first, round by round
        const order = round % 2 ? ([["on", on], ["off", off]] as const) : ([["off", off], ["on", on]] as const);
        for (const [name, c] of order) {
          const e = c.endpoints[0]!;
          const s = await sequential(() => e.call("reply", { bytes: size.bytes }), n, c.pids, Math.min(n, 20));
          add(`redaction.${size.label}.${name}.mean_us`, s.meanUs);
          add(`redaction.${size.label}.${name}.cpu_parent_us`, s.parentCpuUs);
        }
      }
      ctx.log(`  redaction round ${round + 1}/${ctx.rounds}: 1 MiB reply ${median(samples.get("redaction.1m.off.mean_us")!).toFixed(0)} µs without a secret, ${median(samples.get("redaction.1m.on.mean_us")!).toFixed(0)} µs with one`);
    }
  } finally {
    await off.close();
    await on.close();
  }
  for (const [key, values] of samples) fig[key] = median(values);
}
