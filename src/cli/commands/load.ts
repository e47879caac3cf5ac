import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { inert } from "../../inert.ts";
import { askedBecause, hiddenBecause, type ToolPolicy } from "../../host/tool-policy.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

/** Each step, in words; a kind words some differently (KindProfile.words.steps: a Cortex plugin has no sidecar). */
const STEP_WORDS = {
  resolve: "resolve the reference",
  sidecar: "read the folder (sidecar, hash, config)",
  names: "claim the tool and command names",
  trust: "trust (approval)",
  spawn: "spawn the plugin host → ready",
  compare: "compare describe with the sidecar",
  start: "start",
} as const;

export default defineCommand({
  meta: commandMeta({
    name: "load",
    description: "Load a plugin and stop it again, timing each step: resolve, sidecar, names, trust, spawn (dlopen, handshake, describe, attach), compare, start, stop",
    summary: "Load a plugin (trust, spawn, handshake, describe, start, stop), with timings",
  }),
  args: {
    ...pluginArg,
    once: { type: "boolean", description: "Load it even if config.json disables it (approval still applies)" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const began = performance.now();
    const { plugin, timings } = await session.loadTimed(args.plugin, { once: args.once === true });
    const loaded = performance.now();
    await session.unload(plugin.name);
    const stopped = performance.now();
    const ms = (n: number) => Math.round(n * 100) / 100;
    const steps = [...timings.steps.map((s) => ({ step: s.step, ms: ms(s.ms) })), { step: "stop", ms: ms(stopped - loaded) }];
    const phases = timings.phases.map((p) => ({ phase: p.name, atMs: ms(p.ms) }));
    const row = (what: string, n: number) => `  ${what.padEnd(46)} ${n.toFixed(1).padStart(8)} ms`;
    return {
      json: {
        plugin: plugin.name,
        kind: plugin.kind,
        version: plugin.manifest.version,
        tools: plugin.tools.map((x) => x.name),
        exports: plugin.exports,
        sandbox: plugin.sandboxLayers ? plugin.sandboxLayers.join("+") : "unconfined",
        loadedMs: ms(loaded - began),
        totalMs: ms(stopped - began),
        steps,
        phases,
        ...selectionJson(plugin.policy),
      },
      text: [
        `loaded ${inert(plugin.name)} ${inert(plugin.manifest.version)}: ${plugin.tools.length} tool${plugin.tools.length === 1 ? "" : "s"}${plugin.exports.length ? `, exports ${plugin.exports.join(", ")}` : ""}`,
        ...selectionLines(plugin.policy),
        `  sandbox  ${plugin.sandboxLayers ? `enforced by ${plugin.sandboxLayers.join("+")}` : "unconfined (it declares no sandbox)"}`,
        ...steps.flatMap((s) => [
          row(plugin.profile.words.steps[s.step] ?? (s.step in STEP_WORDS ? STEP_WORDS[s.step as keyof typeof STEP_WORDS] : s.step), s.ms),
          ...(s.step === "spawn" ? phases.map((p) => `      ${`${p.phase} began at`.padEnd(42)} ${p.atMs.toFixed(1).padStart(8)} ms`) : []),
        ]),
        row("total", ms(stopped - began)),
      ].join("\n"),
    };
  },
});

// --- tool selection (issue 20): what the config files hide or make ask, and patterns that match nothing ---

function selectionJson(policy: ToolPolicy) {
  return {
    hidden: [...policy.hidden].map(([tool, by]) => ({ tool, ...by })),
    asked: [...policy.asked].map(([tool, by]) => ({ tool, ...by })),
    unmatched: policy.unmatched,
  };
}

/** The load's own lines; the warnings for unmatched patterns went to stderr as the plugin loaded. */
function selectionLines(policy: ToolPolicy): string[] {
  return [
    ...[...policy.hidden].map(([tool, by]) => `  ${inert(tool)} is ${inert(hiddenBecause(by))}`),
    ...[...policy.asked].map(([tool, by]) => `  ${inert(tool)} ${inert(askedBecause(by))}`),
  ];
}
