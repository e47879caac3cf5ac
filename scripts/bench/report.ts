/**
 * BENCHMARKS.md: every target as min / median / max of its ratio over the runs ("met" only if met
 * in every run), then the figures behind them, each as the median over runs [min–max].
 */
import { mcpLazyTable } from "./mcp-lazy.ts";
import { mcpServeTable } from "./mcp-serve.ts";
import { cpus, totalmem } from "node:os";
import { readFileSync } from "node:fs";
import type { Figures } from "./context.ts";
import { median } from "./measure.ts";
import { SIZES } from "./payload.ts";
import { REDACTION_SIZES } from "./redaction.ts";
import { OUTPUT_SIZES } from "./outputs.ts";
import { isMet, TARGETS } from "./targets.ts";

export interface RunRecord {
  figures: Figures;
  startedAt: string;
  seconds: number;
  loadBefore: string;
  loadAfter: string;
  /** Per-round samples of the sections that keep them, by figure name. */
  samples?: Record<string, number[]>;
}

export interface ReportOptions {
  command: string;
  quick: boolean;
  aa?: boolean;
  rounds: number;
  /** Contenders named in the figures besides the fixed ones (e.g. "base" from --baseline). */
  builds: string[];
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return "—";
  const a = Math.abs(x);
  if (a >= 100_000) return `${(x / 1000).toFixed(0)}k`;
  if (a >= 10_000) return `${(x / 1000).toFixed(1)}k`;
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  if (a >= 0.01 || x === 0) return x.toFixed(3);
  return x.toPrecision(2);
}

function spread(runs: RunRecord[], key: string, scale = 1): string {
  const xs = runs.map((r) => r.figures[key]).filter((x): x is number => x !== undefined && Number.isFinite(x)).map((x) => x * scale);
  if (!xs.length) return "—";
  if (xs.length === 1) return fmt(xs[0]!);
  return `${fmt(median(xs))} [${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}]`;
}

/** a ÷ b within each run, as median [min–max] over the runs. */
function ratioSpread(runs: RunRecord[], a: string, b: string): string {
  const xs = runs.filter((r) => r.figures[a] !== undefined && r.figures[b] !== undefined).map((r) => r.figures[a]! / r.figures[b]!);
  if (!xs.length) return "—";
  if (xs.length === 1) return fmt(xs[0]!);
  return `${fmt(median(xs))} [${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}]`;
}

function has(runs: RunRecord[], prefix: string): boolean {
  return runs.some((r) => Object.keys(r.figures).some((k) => k.startsWith(prefix)));
}

export function machine(): string[] {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const kernel = readFileSync("/proc/version", "utf8").split(" ").slice(0, 3).join(" ");
  return [`- machine: ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM; ${kernel}`, `- Bun ${Bun.version} (${Bun.revision.slice(0, 9)}), @modelcontextprotocol/sdk 1.32.2`];
}

export function targetTable(runs: RunRecord[]): string[] {
  const lines = ["| target | min | median | max | met in | |", "| --- | --- | --- | --- | --- | --- |"];
  for (const t of TARGETS) {
    const usable = runs.filter((r) => t.needs.every((k) => r.figures[k] !== undefined));
    if (!usable.length) continue;
    const values = usable.map((r) => t.ratio(r.figures));
    const met = values.filter((v) => isMet(t, v)).length;
    const unit = t.unit ?? "×";
    const show = (v: number) => `${fmt(v)}${unit}`;
    lines.push(`| ${t.text} | ${show(Math.min(...values))} | ${show(median(values))} | ${show(Math.max(...values))} | ${met}/${values.length} runs | ${met === values.length ? "met" : "**missed**"} |`);
  }
  return lines;
}

export function render(runs: RunRecord[], options: ReportOptions): string {
  const contenders = [...options.builds.flatMap((b) => [b, `${b}-spin0`]), "cxagent-ts", "floor", "mcp", "c", "c-spin"];
  const names: Record<string, string> = { "cxagent-ts": "cxagent, TypeScript plugin", floor: "floor (Bun child)", mcp: "MCP SDK peer", c: "**C limit**", "c-spin": "C pair, spinning 100 µs before reads" };
  const label = (c: string) => names[c] ?? (c.endsWith("-spin0") ? `${c.slice(0, -6)}, spin off` : c);
  const out: string[] = [
    "# Benchmarks",
    "",
    ...(options.quick ? ["> **Quick mode** (`--quick`): one short run, for development only. These figures are not results.", ""] : []),
    ...(options.aa ? ["> **A/A check** (`--aa`): the contenders named \"spin off\" run as built. Every spin ratio below compares a build with itself; how far it is from 1 is the method's noise.", ""] : []),
    `Written by \`${options.command}\` (scripts/bench.ts, scripts/bench/*). ${runs.length} run${runs.length === 1 ? "" : "s"}, each of ${options.rounds} interleaved round${options.rounds === 1 ? "" : "s"} per`,
    "measurement; every figure below is the median over the runs with [min–max]; every ratio is computed",
    "within one run, and a target is met only if it is met in every run.",
    "",
    ...machine(),
    ...runs.map((r, i) => `- run ${i + 1}: ${r.startedAt}, ${r.seconds.toFixed(0)} s, load average before ${r.loadBefore}, after ${r.loadAfter}`),
    "",
    "## Targets (issue 15)",
    "",
    ...targetTable(runs),
    "",
  ];
  if (has(runs, "cold.32.bare_serial_ms")) {
    out.push(
      `Beside the parallel-load target, the runtime's own start-up in the same runs: 32 bare Bun children started all at once took ${ratioSpread(runs, "cold.32.bare_ms", "cold.32.bare_serial_ms")} times as long as started one after another (median [min–max] over the runs).`,
      "",
    );
  }
  if (has(runs, "cold.32.ideal_serial_ms")) {
    out.push(
      `And what this machine allows any start that computes: 32 ideal starts (one C thread each, computing for as long as one cold load takes, then answering a line) took ${ratioSpread(runs, "cold.32.ideal_ms", "cold.32.ideal_serial_ms")} times as long all at once as one after another.`,
      "",
    );
  }
  if (has(runs, "seq.")) {
    out.push("## Calls: the trivial tool (test/fixtures/noop.c)", "");
    out.push("| contender | mean µs | median µs | p99 µs | CPU/call µs: parent + host | 1 in flight, calls/s | 16 | 64 | 256 |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const c of contenders) {
      if (!has(runs, `seq.${c}.`)) continue;
      out.push(
        `| ${label(c)} | ${spread(runs, `seq.${c}.mean_us`)} | ${spread(runs, `seq.${c}.median_us`)} | ${spread(runs, `seq.${c}.p99_us`)} | ${spread(runs, `seq.${c}.cpu_parent_us`)} + ${spread(runs, `seq.${c}.cpu_host_us`)} | ${spread(runs, `w1.${c}.calls_s`)} | ${spread(runs, `w16.${c}.calls_s`)} | ${spread(runs, `w64.${c}.calls_s`)} | ${spread(runs, `w256.${c}.calls_s`)} |`,
      );
    }
    if (has(runs, "seq.cxagent-ts.")) {
      out.push(
        "",
        `The same tool as a TypeScript plugin (scripts/bench/noop-module.ts), per run: sequential mean ${ratioSpread(runs, "seq.cxagent-ts.mean_us", "seq.cxagent.mean_us")}× the native plugin's and ${ratioSpread(runs, "seq.cxagent-ts.mean_us", "seq.c.mean_us")}× the C limit's; 16 in flight ${ratioSpread(runs, "w16.cxagent-ts.calls_s", "w16.cxagent.calls_s")}× the native plugin's calls/s and ${ratioSpread(runs, "w16.cxagent-ts.calls_s", "w16.c.calls_s")}× the C limit's.`,
      );
    }
    out.push("", "CPU per call in flight, µs, parent + host:", "", "| contender | 16 | 64 | 256 |", "| --- | --- | --- | --- |");
    for (const c of contenders) {
      if (!has(runs, `w16.${c}.`)) continue;
      out.push(`| ${label(c)} | ${[16, 64, 256].map((w) => `${spread(runs, `w${w}.${c}.cpu_parent_us`)} + ${spread(runs, `w${w}.${c}.cpu_host_us`)}`).join(" | ")} |`);
    }
    out.push("");
  }
  if (has(runs, "payload.")) {
    out.push("## Payloads (scripts/bench/payload-plugin.c), one call at a time", "");
    for (const kind of ["reply", "request"]) {
      out.push(`${kind === "reply" ? "Replies" : "Requests"}, MB/s (size ÷ mean time per call):`, "", `| contender | ${SIZES.map((s) => s.label.replace("k", " KiB").replace("m", " MiB")).join(" | ")} |`, `| --- |${SIZES.map(() => " --- |").join("")}`);
      for (const c of contenders) {
        if (!has(runs, `payload.${kind}.1k.${c}.`)) continue;
        out.push(`| ${label(c)} | ${SIZES.map((s) => spread(runs, `payload.${kind}.${s.label}.${c}.mb_s`)).join(" | ")} |`);
      }
      out.push("", `CPU per ${kind}, µs, parent + host:`, "", `| contender | ${SIZES.map((s) => s.label).join(" | ")} |`, `| --- |${SIZES.map(() => " --- |").join("")}`);
      for (const c of contenders) {
        if (!has(runs, `payload.${kind}.1k.${c}.`)) continue;
        out.push(`| ${label(c)} | ${SIZES.map((s) => `${spread(runs, `payload.${kind}.${s.label}.${c}.cpu_parent_us`)} + ${spread(runs, `payload.${kind}.${s.label}.${c}.cpu_host_us`)}`).join(" | ")} |`);
      }
      out.push("");
    }
  }
  if (has(runs, "redaction.")) {
    out.push(
      "## Redaction of secrets (scripts/bench/redaction.ts), one call at a time",
      "",
      "The payload plugin's replies through two sessions of this build, in the same rounds: one knowing no secret, one that resolved a secret (every reply scanned for each of its forms).",
      "",
      "| reply | mean µs, no secret | mean µs, one secret | ratio | parent CPU µs, no secret / one secret |",
      "| --- | --- | --- | --- | --- |",
    );
    for (const s of REDACTION_SIZES) {
      const k = (name: string, what: string) => `redaction.${s.label}.${name}.${what}`;
      out.push(`| ${s.label.replace("k", " KiB").replace("m", " MiB")} | ${spread(runs, k("off", "mean_us"))} | ${spread(runs, k("on", "mean_us"))} | ${ratioSpread(runs, k("on", "mean_us"), k("off", "mean_us"))} | ${spread(runs, k("off", "cpu_parent_us"))} / ${spread(runs, k("on", "cpu_parent_us"))} |`);
    }
    out.push("");
  }
  if (has(runs, "outputs.")) {
    out.push("## Large results through `cxagent invoke` into a pipe (issue 41)", "");
    out.push(
      `Uncapped (a pipe's default) and with \`--max-output 100000\` (spilled while read: a preview and a reference); the process's whole time and its peak RSS. A 10-byte reply in the same rounds: ${spread(runs, "outputs.base.ms")} ms, ${spread(runs, "outputs.base.rss_mb")} MiB.`,
      "",
      "| size | mode | time to the caller, ms | parent peak RSS, MiB | above the 10-byte baseline, MiB |",
      "| --- | --- | --- | --- | --- |",
    );
    for (const size of OUTPUT_SIZES) {
      for (const mode of ["uncapped", "capped"]) {
        const key = `outputs.${size.label}.${mode}`;
        out.push(`| ${size.label.replace("m", " MiB").replace(" MiBb", " MB")} | ${mode} | ${spread(runs, `${key}.ms`)} | ${spread(runs, `${key}.rss_mb`)} | ${spread(runs, `${key}.rss_above_mb`)} |`);
      }
    }
    out.push("");
  }
  const pluginTable = (prefix: string, counts: number[]) => {
    out.push(`| contender | ${counts.map((n) => `${n} busy: calls/s | CPU/call µs (parent + hosts)`).join(" | ")} |`, `| --- |${counts.map(() => " --- | --- |").join("")}`);
    for (const c of contenders) {
      if (!has(runs, `${prefix}${counts[0]}.${c}.`)) continue;
      out.push(`| ${label(c)} | ${counts.map((n) => `${spread(runs, `${prefix}${n}.${c}.calls_s`)} | ${spread(runs, `${prefix}${n}.${c}.cpu_parent_us`)} + ${spread(runs, `${prefix}${n}.${c}.cpu_host_us`)}`).join(" | ")} |`);
    }
    out.push("");
  };
  if (has(runs, "plugins.")) {
    out.push("## Many plugins busy at once (one call in flight on each)", "");
    pluginTable("plugins.", [1, 8, 32]);
  }
  if (has(runs, "idle.")) {
    out.push(`32 loaded plugin hosts left idle for ${spread(runs, "idle.seconds")} s: ${spread(runs, "idle.hosts_cpu_pct")} % of one CPU for all hosts together (${spread(runs, "idle.per_host_cpu_pct")} % each); the parent ${spread(runs, "idle.parent_cpu_pct")} %.`, "");
  }
  if (has(runs, "contended.")) {
    out.push(`## Contended: a CPU-bound competitor on each of the ${cpus().length} cores`, "");
    out.push("| contender | mean µs | median µs | p99 µs | CPU/call µs: parent + host | 16 in flight, calls/s | 32 plugins busy, calls/s |", "| --- | --- | --- | --- | --- | --- | --- |");
    for (const c of contenders) {
      if (!has(runs, `contended.seq.${c}.`)) continue;
      out.push(
        `| ${label(c)} | ${spread(runs, `contended.seq.${c}.mean_us`)} | ${spread(runs, `contended.seq.${c}.median_us`)} | ${spread(runs, `contended.seq.${c}.p99_us`)} | ${spread(runs, `contended.seq.${c}.cpu_parent_us`)} + ${spread(runs, `contended.seq.${c}.cpu_host_us`)} | ${spread(runs, `contended.w16.${c}.calls_s`)} | ${spread(runs, `contended.plugins.32.${c}.calls_s`)} |`,
      );
    }
    out.push("");
  }
  if (has(runs, "mcpserve.")) out.push(...mcpServeTable((key) => spread(runs, key)));
  out.push(...mcpLazyTable((key, scale) => spread(runs, key, scale), (prefix) => has(runs, prefix)));
  if (has(runs, "cold.") || has(runs, "oneshot.") || has(runs, "sandbox.") || has(runs, "lease.")) {
    out.push("## Start-up", "", "| measurement | cxagent | baseline |", "| --- | --- | --- |");
    if (has(runs, "cold.1.")) out.push(`| cold load, spawn → ready → started, ms | ${spread(runs, "cold.1.cxagent_ms")} (with sidecar, hash, approval: ${spread(runs, "cold.1.with_trust_ms")}) | bare Bun child answering a line: ${spread(runs, "cold.1.bare_ms")} |`);
    if (has(runs, "cold.1.ts_ms")) out.push(`| cold load of a TypeScript plugin, ms | ${spread(runs, "cold.1.ts_ms")} (with sidecar, hash, approval: ${spread(runs, "cold.1.ts_with_trust_ms")}) | the native plugin above: ${spread(runs, "cold.1.cxagent_ms")} |`);
    if (has(runs, "cold.32.")) out.push(`| 32 plugins, ms: one after another / all at once | ${spread(runs, "cold.32.serial_ms")} / ${spread(runs, "cold.32.parallel_ms")} | 32 bare Bun children${has(runs, "cold.32.bare_serial_ms") ? `, one after another / all at once: ${spread(runs, "cold.32.bare_serial_ms")} /` : " at once:"} ${spread(runs, "cold.32.bare_ms")}${has(runs, "cold.32.ideal_serial_ms") ? `; 32 ideal starts: ${spread(runs, "cold.32.ideal_serial_ms")} / ${spread(runs, "cold.32.ideal_ms")}` : ""} |`);
    if (has(runs, "sandbox.cold.")) out.push(`| cold load, confined by the kernel sandbox (issue 39), ms; ratio to unconfined in the same run | ${spread(runs, "sandbox.cold.confined_ms")}; ×${ratioSpread(runs, "sandbox.cold.confined_ms", "sandbox.cold.unconfined_ms")} | unconfined: ${spread(runs, "sandbox.cold.unconfined_ms")} |`);
    if (has(runs, "sandbox.warm.")) out.push(`| warm call on a confined host, median µs; ratio to unconfined | ${spread(runs, "sandbox.warm.confined_us")}; ×${ratioSpread(runs, "sandbox.warm.confined_us", "sandbox.warm.unconfined_us")} | unconfined: ${spread(runs, "sandbox.warm.unconfined_us")} |`);
    if (has(runs, "lease.")) out.push(`| first call under a sandbox lease (its own host's start), ms; warm call under it, median µs | ${spread(runs, "lease.first_ms")}; ${spread(runs, "lease.warm.leased_us")} | without a lease: ${spread(runs, "lease.warm.plain_us")} µs |`);
    if (has(runs, "oneshot.")) out.push(`| one-shot compiled \`cxagent invoke\` of calc_multiply, ms | ${spread(runs, "oneshot.invoke_ms")} | \`cxagent --version\`: ${spread(runs, "oneshot.version_ms")} |`);
    out.push("");
  }
  if (has(runs, "mem.") || has(runs, "soak.") || has(runs, "crash.") || has(runs, "process.")) {
    out.push("## Memory and robustness", "");
    const mib = 1 / 1024;
    if (has(runs, "mem.")) out.push(`- idle plugin host: RSS ${spread(runs, "mem.idle.host_rss_kib", mib)} MiB (PSS ${spread(runs, "mem.idle.host_pss_kib", mib)}); bare Bun child: RSS ${spread(runs, "mem.idle.bare_rss_kib", mib)} MiB (PSS ${spread(runs, "mem.idle.bare_pss_kib", mib)}).`);
    if (has(runs, "soak.")) {
      out.push(
        `- soak: ${spread(runs, "soak.calls")} calls at ${spread(runs, "soak.calls_s")} calls/s (${spread(runs, "soak.malformed")} malformed on purpose); host RSS after warm-up ${spread(runs, "soak.host_rss_warm_kib", mib)} MiB, after the soak ${spread(runs, "soak.host_rss_end_kib", mib)} MiB; parent RSS ${spread(runs, "soak.parent_rss_warm_kib", mib)} → ${spread(runs, "soak.parent_rss_end_kib", mib)} MiB; strings returned ${spread(runs, "soak.returned")}, freed ${spread(runs, "soak.freed")}.`,
      );
    }
    if (has(runs, "crash.")) out.push(`- crash detection (segfault in invoke → failed result): ${spread(runs, "crash.detect_ms")} ms (worst ${spread(runs, "crash.detect_max_ms")} ms).`);
    if (has(runs, "process.")) out.push(`- a Cortex process tool's call (examples/cortex-process shell_word_count, one process per call): ${spread(runs, "process.call_ms")} ms; the same script spawned by Bun alone: ${spread(runs, "process.bare_ms")} ms; the same tool confined by \`[cxagent.sandbox]\` (each call through the sandbox launcher): ${spread(runs, "process.confined_call_ms")} ms.`);
    out.push("");
  }
  out.push(...METHOD);
  return out.join("\n");
}

const METHOD = [
  "## Method",
  "",
  "- **Contenders**, all serving the same library: cxagent through its library API (`Session.open` → `load`",
  "  → `plugin.invoke`), as built and with spinning off (`CXAGENT_HOST_SPIN_US=0`: the host's and the parent's); the floor",
  "  (scripts/bench/floor-child.ts, a Bun child answering JSON lines through bun:ffi); the MCP SDK peer",
  "  (scripts/bench/mcp-server.ts, McpServer over stdio under Bun, called with the SDK's Client); and the",
  "  **C limit** (scripts/bench/c-limit.c, built with cc at bench time): a C parent and a C child over two",
  "  pipes exchanging the same request and reply lines, the child calling the library's invoke and free,",
  "  the parent only counting newlines. Beside it, for reference, the same pair with both sides polling",
  "  their pipe for up to 100 µs before each blocking read: the gap between the two is what waking a",
  "  sleeping process costs on the machine at that moment (on this VM it ranged from 2 to 20 µs).",
  "- **Rounds**: each round starts every contender afresh and measures them in turn, in the reverse",
  "  order every other round, so neither a drift of the machine within a round nor the scheduler's",
  "  memory of a process (EEVDF keeps a task's lag across its sleeps: beside two CPU burners the host",
  "  started first ran at 0.5-0.6x the one started second, whichever build it was) favours one of",
  "  them; a figure is the median over rounds. The rounds are even in number (4), so each order",
  "  counts as often: with 3 rounds (the table at b95d8be), the MCP peer's sequential mean in the",
  "  one reversed round was 1.2-1.7x its mean in each of the other two in 4 runs of 5, so the order",
  "  of two rounds made the median. The median of an even number of values is the mean of the",
  "  middle two.",
  "- **Latency**: mean = wall time ÷ calls; median and p99 of per-call times; 300 warm-up calls first.",
  "  In-flight throughput keeps W calls outstanding at all times.",
  "- **CPU per call**: the parent by `process.cpuUsage()` (getrusage: user + system, all threads); each",
  "  child by the run time of its threads in `/proc/<pid>/task/*/schedstat`; the C parent by getrusage,",
  "  the C child by `/proc/<pid>/schedstat`, all around the timed loop only.",
  "- **Payloads**: tool `reply` answers N bytes of letters (built once per size, so the plugin costs",
  "  nothing); tool `take` gets arguments `{\"data\": N letters}`. MB/s = N ÷ mean time per call.",
  "- **Many plugins**: N separate plugin processes (cxagent: N copies of noop under their own names in one",
  "  session), one call in flight on each; aggregate calls/s; CPU of the parent and all hosts per call.",
  "- **Contended**: one `c-limit burn` busy loop per core, at normal priority, for the whole section.",
  "  There a process's share of the CPUs swings from one millisecond to the next, and each process",
  "  keeps a luck of its own for its life (a host started beside the burners ran 0.5-2x as fast as its",
  "  twin started next to it, whichever build either was). So cxagent's two builds are measured",
  "  together: each of 12 rounds opens groups of fresh sessions, one of each build per group",
  "  (6 groups a round with one plugin, 1 with 32), and each group's calls alternate between its",
  "  members in turns (25 calls one at a time, 400 calls at 16 in flight, 4 calls per plugin with 32",
  "  busy), the first member going first in every other turn, until each made its share; a build's",
  "  figures in a group count its own turns only. The C limit runs by itself once a round.",
  "- **Spin comparisons** are paired: the ratio of as built to spin off within each round (quiet: the",
  "  two measured one after the other, with fresh processes) or each group (contended: measured",
  "  together, as above), its median over the rounds or groups; they count as \"no worse\" within 5 %",
  "  (0.95×). The tables show each contender's own median. An A/A run (`npm run bench -- --aa`: the",
  "  \"spin off\" contenders run as built) checks the method: for the contended rows, 4 runs gave",
  "  0.987-1.03 (sequential), 0.968-1.02 (16 in flight) and 0.981-1.01 (32 busy); measured one after",
  "  the other in 24 rounds, as before 2026-12-05, three runs gave 0.836-1.01, 0.862-1.01 and",
  "  0.979-1.07.",
  "- **`cxagent mcp` (issue 42)**: the compiled binary against scripts/bench/mcp-minimal.mjs, the",
  "  SDK's McpServer doing the calculator's multiplication in JS, run by Node and by Bun, all driven by",
  "  the SDK's Client over stdio. The floors show what the targets ask: scripts/bench/mcp-floor.mjs",
  "  (Bun) and mcp-floor.c answer from the lines they read without checking anything, in one process;",
  "  scripts/bench/mcp-relay.mjs passes bytes to a second process running the Bun floor and back, so",
  "  it costs what a second process costs and nothing else. A ratio to a minimal server is taken",
  "  within each round. For memory, each contender's executable is shared within its own tree only:",
  "  the Bun servers run a copy of bun made for them, since run as the benchmark's own Bun they were",
  "  charged half of the runtime's pages (the other half went to the benchmark).",
  "- **TypeScript plugin**: scripts/bench/noop-module.ts, the noop tool as a module plugin in its own",
  "  plugin host, through the same library API; its calls are served on the host's event loop.",
  "- **Cold load**: spawn → ready → start answered, against a bare Bun child (scripts/bench/bare-child.ts)",
  "  answering one line. 32 plugins: one session each way; beside them, 32 bare children started",
  "  one after another and all at once, which shows how far below serial the runtime's own start-up",
  "  gets on this machine (a Bun start uses more than one thread, so serial starts already overlap",
  "  some of their work). Children and hosts stay up until the clock stops (until 2026-12-05 each",
  "  bare child was ended inside the timing). And 32 ideal starts, the same two ways: `c-limit start",
  "  <ms>` (scripts/bench/c-limit.c), one C thread that computes for as long as the cold load's",
  "  median in that run, answers a line and waits. A start that only computes, on one thread, is",
  "  the best case for that ratio: on N CPUs, all at once can at best take 1/N of one after another,",
  "  and only if nothing else needs the CPUs meanwhile.",
  "- **One-shot**: the compiled `dist/cxagent`, process start to exit, 40 pairs; the calculator was",
  "  approved through the CLI first, so its inputSchemas are in checked-schemas.json, as after any",
  "  approval (the first command after a new version checks them again).",
  "- **Memory**: VmRSS and Pss from /proc after 300 ms idle. Soak: test/fixtures/invoke-replies.c, a",
  "  rotation of good and malformed replies, 8 in flight, from a Bun process of its own",
  "  (scripts/bench/soak-child.ts), the parent whose RSS is read after a full GC, 300 ms and another",
  "  (the allocator returns freed pages a little after a collection); the fixture",
  "  counts strings returned and freed. Approvals are given through the CLI: `cxagent approve --hash`.",
  "",
];
