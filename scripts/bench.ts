#!/usr/bin/env bun
/**
 * The benchmark of issue 15: cxagent against the C limit (a C parent and child over pipes), the
 * floor (a Bun child answering lines) and the MCP SDK peer, all measured in the same run, repeated
 * over several runs; BENCHMARKS.md gives every ratio as min / median / max over the runs.
 *
 * Options and exit statuses: USAGE below, or `npm run bench -- --help`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Session } from "../src/index.ts";
import { callSection, contendedCallSection } from "./bench/calls.ts";
import type { Build, Context, Figures } from "./bench/context.ts";
import { crashSection, idleMemorySection, soakSection } from "./bench/memory.ts";
import { processSection } from "./bench/process.ts";
import { mcpLazySection } from "./bench/mcp-lazy.ts";
import { mcpServeSection } from "./bench/mcp-serve.ts";
import { payloadSection } from "./bench/payload.ts";
import { redactionSection } from "./bench/redaction.ts";
import { outputsSection } from "./bench/outputs.ts";
import { contendedPluginsSection, idleSection, pluginsSection } from "./bench/plugins.ts";
import { render, type RunRecord, targetTable } from "./bench/report.ts";
import { sandboxSection } from "./bench/sandbox.ts";
import { leaseSection } from "./bench/lease.ts";
import { prepare, ROOT, run } from "./bench/setup.ts";
import { coldLoadSection, oneShotSection } from "./bench/startup.ts";

const SECTIONS: Record<string, (ctx: Context, fig: Figures) => unknown> = {
  calls: callSection,
  payload: payloadSection,
  redaction: redactionSection,
  outputs: outputsSection,
  plugins: pluginsSection,
  idle: idleSection,
  "contended-calls": contendedCallSection,
  "contended-plugins": contendedPluginsSection,
  cold: coldLoadSection,
  oneshot: oneShotSection,
  memory: idleMemorySection,
  soak: (ctx, fig) => soakSection(ctx, fig),
  crash: crashSection,
  process: processSection,
  "mcp-serve": mcpServeSection,
  "mcp-lazy": mcpLazySection,
  sandbox: sandboxSection,
  lease: leaseSection,
};

const USAGE = `Usage: npm run bench [-- options]

  (no options)      5 runs, writes BENCHMARKS.md (about an hour on 2 quiet vCPUs)
  --quick           1 short run, for development (writes the table too)
  --runs N          another number of runs
  --rounds N        another number of rounds per run (default 4; keep it even, see BENCHMARKS.md)
  --out F           write the table to F instead of BENCHMARKS.md
  --only S,S        only these sections: ${Object.keys(SECTIONS).join(", ")}
  --baseline DIR    also measure the cxagent checkout in DIR, interleaved ("base"), for A/B
                    comparisons of two builds
  --json F          also write every run's raw figures and per-round samples to F
  --aa              A/A check of the method: the "spin off" contenders run as built, so every
                    spin ratio should come out 1
  --help            this text

Exits 1 when a run fails and 2 when an option is wrong; never because of a figure.`;

/** A wrong option: said in one line, without a stack, exit status 2. */
function wrongOption(text: string): never {
  console.error(`bench: ${text}`);
  process.exit(2);
}

function parseArgs(argv: string[]) {
  const options = { quick: false, runs: 0, rounds: 0, out: join(ROOT, "BENCHMARKS.md"), only: Object.keys(SECTIONS), baseline: "", json: "", aa: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) wrongOption(`${a} needs a value`);
      return v;
    };
    const count = () => {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) wrongOption(`${a} needs a whole number of at least 1, not '${v}'`);
      return n;
    };
    if (a === "--help" || a === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else if (a === "--quick") options.quick = true;
    else if (a === "--aa") options.aa = true;
    else if (a === "--runs") options.runs = count();
    else if (a === "--rounds") options.rounds = count();
    else if (a === "--out") options.out = resolve(value());
    else if (a === "--json") options.json = resolve(value());
    else if (a === "--baseline") options.baseline = resolve(value());
    else if (a === "--only") {
      options.only = value().split(",");
      const unknown = options.only.filter((s) => !(s in SECTIONS));
      if (unknown.length) wrongOption(`unknown section ${unknown.join(", ")}; the sections are ${Object.keys(SECTIONS).join(", ")}`);
    } else wrongOption(`unknown option ${a} (npm run bench -- --help lists them)`);
  }
  options.runs ||= options.quick ? 1 : 5;
  options.rounds ||= options.quick ? 1 : 4;
  return options;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const log = (text: string) => process.stderr.write(`bench [${((performance.now() - t0) / 1000).toFixed(0)} s]: ${text}\n`);
  log("building the native parts, the binary, the C limit and the bench plugins; approving them with cxagent approve --hash");
  const ws = prepare({ many: 32 });
  process.on("exit", () => ws.cleanup());
  const builds: Build[] = [{ name: "cxagent", Session }];
  if (options.baseline) {
    run([process.execPath, "scripts/build-native.ts", "shim"], {}, options.baseline);
    const base = (await import(join(options.baseline, "src/index.ts"))) as { Session: Build["Session"] };
    builds.push({ name: "base", Session: base.Session });
  }
  const ctx: Context = { ws, quick: options.quick, rounds: options.rounds, builds, aa: options.aa, samples: {}, log };
  const runs: RunRecord[] = [];
  for (let r = 0; r < options.runs; r++) {
    const figures: Figures = {};
    ctx.samples = {};
    const record: RunRecord = { figures, samples: ctx.samples, startedAt: new Date().toISOString(), seconds: 0, loadBefore: loadAverage(), loadAfter: "" };
    const began = performance.now();
    for (const name of options.only) {
      log(`run ${r + 1}/${options.runs}: ${name}`);
      await SECTIONS[name]!(ctx, figures);
    }
    record.seconds = (performance.now() - began) / 1000;
    record.loadAfter = loadAverage();
    runs.push(record);
    log(`run ${r + 1} done in ${record.seconds.toFixed(0)} s`);
  }
  const command = ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" ");
  writeFileSync(options.out, render(runs, { command, quick: options.quick, aa: options.aa, rounds: options.rounds, builds: builds.map((b) => b.name) }));
  if (options.json) writeFileSync(options.json, JSON.stringify(runs, null, 1));
  console.log(targetTable(runs).join("\n"));
  console.log(`\nwritten to ${options.out}`);
}

function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

await main().catch((error) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
