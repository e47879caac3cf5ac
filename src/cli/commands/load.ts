import { defineCommand } from "citty";
import { inert } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

export default defineCommand({
  meta: { name: "load", description: "Load a plugin and stop it again: trust, spawn, handshake, describe, compare, attach, start, stop — with timings" },
  args: {
    ...pluginArg,
    once: { type: "boolean", description: "Load it even if config.json disables it (approval still applies)" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const began = performance.now();
    const plugin = await session.load(args.plugin, { once: args.once === true });
    const loaded = performance.now();
    const stopStarted = performance.now();
    await session.unload(plugin.name);
    const stopped = performance.now();
    const t = plugin.timings;
    const ms = (n: number) => Math.round(n * 100) / 100;
    const timings = {
      trustMs: ms(t.spawnAt - began),
      spawnToReadyMs: ms(t.readyAt - t.spawnAt),
      phasesMs: Object.fromEntries(t.phases.map((p) => [p.name, ms(p.at - t.spawnAt)])),
      startMs: ms(t.startedAt - t.readyAt),
      stopMs: ms(stopped - stopStarted),
      totalMs: ms(stopped - began),
    };
    const rows = [
      ["trust (sidecar, hash, approval)", timings.trustMs],
      ["spawn → ready (handshake, describe, attach)", timings.spawnToReadyMs],
      ["start", timings.startMs],
      ["stop", timings.stopMs],
      ["total", timings.totalMs],
    ] as const;
    return {
      json: { plugin: plugin.name, version: plugin.manifest.version, tools: plugin.tools.map((x) => x.name), exports: plugin.exports, loadedMs: ms(loaded - began), timings },
      text: [
        `loaded ${inert(plugin.name)} ${inert(plugin.manifest.version)}: ${plugin.tools.length} tool${plugin.tools.length === 1 ? "" : "s"}${plugin.exports.length ? `, exports ${plugin.exports.join(", ")}` : ""}`,
        ...rows.map(([what, n]) => `  ${what.padEnd(46)} ${n.toFixed(1).padStart(8)} ms`),
      ].join("\n"),
    };
  },
});
