/**
 * Start-up costs: a cold load (spawn → ready → started), of a native plugin and of a TypeScript
 * one, against a bare Bun child answering a line;
 * 32 plugins loaded one after another and all at once, against 32 bare children started the same
 * two ways (what the runtime's own start-up allows for that ratio on this machine) and 32 ideal
 * starts (`c-limit start`: one C thread computing as long as a cold load takes, which is what
 * the machine allows for any start that computes); and the compiled one-shot `cxagent invoke`
 * against `cxagent --version`.
 */
import { join } from "node:path";
import { type Context, type Figures, scaled } from "./context.ts";
import { median, now } from "./measure.ts";
import { run } from "./setup.ts";

const BARE = join(import.meta.dir, "bare-child.ts");

/**
 * Starts `n` children running `command` (by default a bare Bun child), all at once or one after
 * another; ms until each has answered its first line. Like the plugin hosts of a session, they stay
 * up until the clock has stopped.
 */
async function children(n: number, how: "at once" | "one after another" = "at once", command = [process.execPath, BARE]): Promise<number> {
  const answered = async () => {
    const child = Bun.spawn(command, { stdin: "pipe", stdout: "pipe" });
    child.stdin.write("\n");
    child.stdin.flush();
    await child.stdout.getReader().read();
    return child;
  };
  const t = now();
  const children: Bun.Subprocess[] = [];
  if (how === "at once") children.push(...(await Promise.all(Array.from({ length: n }, answered))));
  else for (let i = 0; i < n; i++) children.push(await answered());
  const ms = now() - t;
  for (const child of children) child.kill();
  await Promise.all(children.map((child) => child.exited));
  return ms;
}

export async function coldLoadSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const Session = ctx.builds[0]!.Session;
  const open = () => Session.open({ stateDir: ws.stateDir, configDir: ws.configDir, confirmTrust: null, reap: false });
  const bare: number[] = [];
  const load: number[] = [];
  const withTrust: number[] = [];
  const module: number[] = [];
  const moduleWithTrust: number[] = [];
  for (let i = 0; i < scaled(ctx, 15, 4); i++) {
    bare.push(await children(1));
    await using session = await open();
    let began = now();
    const plugin = await session.load(ws.noop.folder);
    withTrust.push(now() - began);
    load.push(plugin.timings.startedAt - plugin.timings.spawnAt);
    await session.unload(plugin.name); // the two declare the same tool
    began = now();
    const ts = await session.load(ws.noopModule);
    moduleWithTrust.push(now() - began);
    module.push(ts.timings.startedAt - ts.timings.spawnAt);
  }
  fig["cold.1.bare_ms"] = median(bare);
  fig["cold.1.cxagent_ms"] = median(load);
  fig["cold.1.with_trust_ms"] = median(withTrust);
  fig["cold.1.ts_ms"] = median(module);
  fig["cold.1.ts_with_trust_ms"] = median(moduleWithTrust);

  const serial: number[] = [];
  const parallel: number[] = [];
  const bare32: number[] = [];
  const bare32Serial: number[] = [];
  const ideal32: number[] = [];
  const ideal32Serial: number[] = [];
  const ideal = [ws.cLimit, "start", median(load).toFixed(2)];
  for (let i = 0; i < scaled(ctx, 3, 1); i++) {
    bare32Serial.push(await children(ws.many.length, "one after another"));
    bare32.push(await children(ws.many.length));
    ideal32Serial.push(await children(ws.many.length, "one after another", ideal));
    ideal32.push(await children(ws.many.length, "at once", ideal));
    {
      await using session = await open();
      const t = now();
      for (const folder of ws.many) await session.load(folder);
      serial.push(now() - t);
    }
    {
      await using session = await open();
      const t = now();
      await Promise.all(ws.many.map((f) => session.load(f)));
      parallel.push(now() - t);
    }
  }
  fig["cold.32.bare_ms"] = median(bare32);
  fig["cold.32.bare_serial_ms"] = median(bare32Serial);
  fig["cold.32.ideal_ms"] = median(ideal32);
  fig["cold.32.ideal_serial_ms"] = median(ideal32Serial);
  fig["cold.32.serial_ms"] = median(serial);
  fig["cold.32.parallel_ms"] = median(parallel);
}

export function oneShotSection(ctx: Context, fig: Figures) {
  const { ws } = ctx;
  const env = { CXAGENT_STATE_DIR: ws.stateDir, CXAGENT_CONFIG_DIR: ws.configDir };
  const version: number[] = [];
  const invoke: number[] = [];
  // 40 pairs, alternating. With 20, this ratio ranged 2.27-2.56 over the 15 runs of three tables
  // (2026-12-04/05), where four sets of 100 paired runs of the build of the last of them, outside
  // the bench, gave medians of the per-pair ratio of 2.29-2.31.
  for (let i = 0; i < scaled(ctx, 40, 5); i++) {
    let t = now();
    run([ws.binary, "--version"], env);
    version.push(now() - t);
    t = now();
    const out = run([ws.binary, "invoke", ws.calculator, "calc_multiply", "--args", '{"a":6,"b":7}'], env);
    invoke.push(now() - t);
    if (out.trim() !== "6 * 7 = 42") throw new Error(`unexpected output: ${out}`);
  }
  fig["oneshot.version_ms"] = median(version);
  fig["oneshot.invoke_ms"] = median(invoke);
}
