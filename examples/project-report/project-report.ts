/*
 * project-report.ts -- a plugin that may read the project and write one folder, and nothing else
 * (issue 39): its sidecar's "sandbox" lets it read ${project}, write ${project}/out, no network,
 * 256 MiB beyond the runtime's own and 128 open files. cxagent has the kernel hold it to that
 * before any of this runs: reading ~/.ssh, writing beside out/ or opening a socket fails here
 * with EACCES or EPERM, whatever the code below tries.
 *
 * Nothing to build: cxagent runs it with the Bun inside it. Make the folder first (`mkdir out`):
 * a path the plugin may write is granted only where it exists when its host starts.
 */
import { readdirSync, writeFileSync } from "node:fs";
import { extname, join } from "node:path";
import { definePlugin } from "cxagent";

let project = ".";

/** Files under `folder` by extension, skipping dot folders and node_modules; at most `limit` files. */
function count(folder: string, into: Map<string, number>, limit = { left: 100_000 }): void {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (limit.left <= 0) return;
    if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "out") continue;
    if (entry.isDirectory()) count(join(folder, entry.name), into, limit);
    else if (entry.isFile()) {
      limit.left--;
      const ext = extname(entry.name) || "(none)";
      into.set(ext, (into.get(ext) ?? 0) + 1);
    }
  }
}

export default definePlugin({
  start(ctx) {
    project = ctx.workingDirectory;
  },
  invoke(tool) {
    if (tool !== "report_project") throw new Error(`project-report has no tool '${tool}'`);
    const counts = new Map<string, number>();
    count(project, counts);
    const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([ext, n]) => `| ${ext} | ${n} |`);
    const report = ["# Files in the project", "", "| extension | files |", "| --- | --- |", ...rows, ""].join("\n");
    const path = join(project, "out", "report.md");
    writeFileSync(path, report);
    return { success: true, output: { content: `wrote ${path}: ${counts.size} kinds of file`, path, kinds: counts.size } };
  },
  stop() {},
});
