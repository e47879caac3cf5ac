import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { reapLeftovers, resultStore } from "../../session/state.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

export default defineCommand({
  meta: commandMeta({ name: "reap", description: "End processes left behind by sessions that died (every run does this first), and remove stored results unused for 7 days", summary: "End processes left behind by sessions that died" }),
  args: {
    "dry-run": { type: "boolean", description: "Report what would be ended, signal nothing" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const dryRun = args["dry-run"] === true;
    const report = await reapLeftovers({ stateDir: options.stateDir, dryRun });
    const verb = {
      ended: "ended",
      "would-end": "would end",
      "still-running": "still running after SIGKILL",
      reused: "left alone (pid reused by another process)",
    } as const;
    const what = { host: "plugin host", child: "process", member: "unregistered process in the plugin host's group" } as const;
    const lines = report.entries.map((e) => `${verb[e.outcome]}: ${what[e.kind]} ${e.pid} of plugin '${e.plugin}'`);
    for (const r of report.refused) lines.push(`refused, nothing in it was signalled: ${r.problem}`);
    for (const c of report.corrupt) lines.push(`kept for inspection: ${c.problem}`);
    if (report.live.length) lines.push(`left ${report.live.length} record${report.live.length === 1 ? "" : "s"} of running sessions alone`);
    const results = resultStore(options).reap({ dryRun });
    for (const ref of results.removed) lines.push(`${dryRun ? "would remove" : "removed"}: expired result ${ref}`);
    for (const path of results.foreign) lines.push(`not a result the store wrote, left alone and never read: ${path}`);
    for (const path of results.leftovers) lines.push(`${dryRun ? "would remove" : "removed"}: ${path}, a result write cut short (the process writing it ended)`);
    return {
      json: { dryRun, ...report, results },
      text: lines.length ? lines.join("\n") : "nothing to reap",
    };
  },
});
