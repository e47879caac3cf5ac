/**
 * The targets of issue 15, each a ratio computed from one run's figures. A target is met only if
 * it is met in every run.
 */
import type { Figures } from "./context.ts";

export interface Target {
  text: string;
  /** The figures it needs; a run without them (a section left out) skips the target. */
  needs: string[];
  ratio(f: Figures): number;
  limit: number;
  better: "lower" | "higher";
  unit?: string;
}

const cpu = (f: Figures, key: string) => f[`${key}.cpu_parent_us`]! + f[`${key}.cpu_host_us`]!;

/** Spinning must never make things worse: within 5 % of the same build with the spin off. */
const NO_WORSE = 0.95;

export const TARGETS: Target[] = [
  { text: "sequential mean ≤ 3× the C limit", needs: ["seq.cxagent.mean_us", "seq.c.mean_us"], ratio: (f) => f["seq.cxagent.mean_us"]! / f["seq.c.mean_us"]!, limit: 3, better: "lower" },
  { text: "sequential p99 ≤ 10× the C limit", needs: ["seq.cxagent.p99_us", "seq.c.p99_us"], ratio: (f) => f["seq.cxagent.p99_us"]! / f["seq.c.p99_us"]!, limit: 10, better: "lower" },
  { text: "CPU per sequential call (parent + host) ≤ 3× the C limit's", needs: ["seq.cxagent.cpu_host_us", "seq.c.cpu_host_us"], ratio: (f) => cpu(f, "seq.cxagent") / cpu(f, "seq.c"), limit: 3, better: "lower" },
  { text: "16 in flight: ≥ 0.4× the C limit's calls/s", needs: ["w16.cxagent.calls_s", "w16.c.calls_s"], ratio: (f) => f["w16.cxagent.calls_s"]! / f["w16.c.calls_s"]!, limit: 0.4, better: "higher" },
  { text: "256 in flight no lower than 16 in flight", needs: ["w256.cxagent.calls_s", "w16.cxagent.calls_s"], ratio: (f) => f["w256.cxagent.calls_s"]! / f["w16.cxagent.calls_s"]!, limit: 1, better: "higher" },
  { text: "≥ 5× faster than the MCP SDK peer, sequential (mean)", needs: ["seq.mcp.mean_us", "seq.cxagent.mean_us"], ratio: (f) => f["seq.mcp.mean_us"]! / f["seq.cxagent.mean_us"]!, limit: 5, better: "higher" },
  { text: "≥ 4× the MCP SDK peer's calls/s at 16 in flight", needs: ["w16.mcp.calls_s", "w16.cxagent.calls_s"], ratio: (f) => f["w16.cxagent.calls_s"]! / f["w16.mcp.calls_s"]!, limit: 4, better: "higher" },
  { text: "1 MiB reply ≥ 1 GB/s", needs: ["payload.reply.1m.cxagent.mb_s"], ratio: (f) => f["payload.reply.1m.cxagent.mb_s"]! / 1000, limit: 1, better: "higher", unit: " GB/s" },
  { text: "1 MiB reply ≤ 3× the C limit's time", needs: ["payload.reply.1m.cxagent.mean_us", "payload.reply.1m.c.mean_us"], ratio: (f) => f["payload.reply.1m.cxagent.mean_us"]! / f["payload.reply.1m.c.mean_us"]!, limit: 3, better: "lower" },
  { text: "1 MiB request ≥ 1 GB/s", needs: ["payload.request.1m.cxagent.mb_s"], ratio: (f) => f["payload.request.1m.cxagent.mb_s"]! / 1000, limit: 1, better: "higher", unit: " GB/s" },
  { text: "1 MiB request ≤ 3× the C limit's time", needs: ["payload.request.1m.cxagent.mean_us", "payload.request.1m.c.mean_us"], ratio: (f) => f["payload.request.1m.cxagent.mean_us"]! / f["payload.request.1m.c.mean_us"]!, limit: 3, better: "lower" },
  ...noWorse("sequential mean", "seq.%.mean_us", "lower"),
  ...noWorse("16 in flight, calls/s", "w16.%.calls_s", "higher"),
  ...noWorse("32 plugins busy, aggregate calls/s", "plugins.32.%.calls_s", "higher"),
  ...noWorse("contended: sequential mean", "contended.seq.%.mean_us", "lower"),
  ...noWorse("contended: 16 in flight, calls/s", "contended.w16.%.calls_s", "higher"),
  ...noWorse("contended: 32 plugins busy, calls/s", "contended.plugins.32.%.calls_s", "higher"),
  { text: "32 idle plugin hosts: ≤ 0.1 % of one CPU, all together", needs: ["idle.hosts_cpu_pct"], ratio: (f) => f["idle.hosts_cpu_pct"]!, limit: 0.1, better: "lower", unit: " %" },
  { text: "cold load ≤ 1.3× a bare Bun child answering a line", needs: ["cold.1.cxagent_ms", "cold.1.bare_ms"], ratio: (f) => f["cold.1.cxagent_ms"]! / f["cold.1.bare_ms"]!, limit: 1.3, better: "lower" },
  { text: "32 plugins loaded in parallel ≤ 0.5× serial", needs: ["cold.32.parallel_ms", "cold.32.serial_ms"], ratio: (f) => f["cold.32.parallel_ms"]! / f["cold.32.serial_ms"]!, limit: 0.5, better: "lower" },
  { text: "one-shot compiled invoke ≤ 2.5× `--version`", needs: ["oneshot.invoke_ms", "oneshot.version_ms"], ratio: (f) => f["oneshot.invoke_ms"]! / f["oneshot.version_ms"]!, limit: 2.5, better: "lower" },
  { text: "idle host RSS ≤ 1.15× a bare Bun child", needs: ["mem.idle.host_rss_kib", "mem.idle.bare_rss_kib"], ratio: (f) => f["mem.idle.host_rss_kib"]! / f["mem.idle.bare_rss_kib"]!, limit: 1.15, better: "lower" },
  { text: "soak: host RSS grows < 5 % after warm-up", needs: ["soak.host_growth_pct"], ratio: (f) => f["soak.host_growth_pct"]!, limit: 5, better: "lower", unit: " %" },
  { text: "soak: parent RSS grows < 5 % after warm-up", needs: ["soak.parent_growth_pct"], ratio: (f) => f["soak.parent_growth_pct"]!, limit: 5, better: "lower", unit: " %" },
  { text: "soak: every returned string is freed (returned − freed)", needs: ["soak.returned", "soak.freed"], ratio: (f) => f["soak.returned"]! - f["soak.freed"]!, limit: 0, better: "lower", unit: "" },
  ...(["node", "bun"] as const).flatMap((runtime): Target[] => [
    {
      text: `\`cxagent mcp\` sequential mean ≤ 0.7× a minimal SDK server's (${runtime === "node" ? "Node" : "Bun"}; issue 42)`,
      needs: ["mcpserve.seq.cxagent-mcp.mean_us", `mcpserve.seq.minimal-${runtime}.mean_us`],
      ratio: (f) => f["mcpserve.seq.cxagent-mcp.mean_us"]! / f[`mcpserve.seq.minimal-${runtime}.mean_us`]!,
      limit: 0.7,
      better: "lower",
    },
    {
      text: `\`cxagent mcp\` 16 in flight ≥ 1.5× a minimal SDK server's calls/s (${runtime === "node" ? "Node" : "Bun"}; issue 42)`,
      needs: ["mcpserve.w16.cxagent-mcp.calls_s", `mcpserve.w16.minimal-${runtime}.calls_s`],
      ratio: (f) => f["mcpserve.w16.cxagent-mcp.calls_s"]! / f[`mcpserve.w16.minimal-${runtime}.calls_s`]!,
      limit: 1.5,
      better: "higher",
    },
  ]),
  ...([1, 5, 20] as const).flatMap((n): Target[] =>
    (["listed", "called"] as const).map((when) => {
      const key = (s: string) => `mcplazy.${n}.${s}.pss_${when}_kib`;
      return {
        text: `\`cxagent mcp\`, ${n} plugin${n === 1 ? "" : "s"}: tree PSS after ${when === "listed" ? "tools/list" : "one call each"} below the best of N minimal SDK servers (issue 42)`,
        needs: [key("cxagent-mcp"), key("minimal-bun")],
        ratio: (f: Figures) => f[key("cxagent-mcp")]! / Math.min(f[key("minimal-bun")]!, f[key("minimal-node")] ?? Infinity),
        limit: 1,
        better: "lower" as const,
      };
    }),
  ),
  { text: "`cxagent mcp`: 10 plugins' tools all listed ≤ 50 ms (issue 42)", needs: ["mcplazy.10.cxagent-mcp.listed_ms"], ratio: (f) => f["mcplazy.10.cxagent-mcp.listed_ms"]!, limit: 50, better: "lower", unit: " ms" },
  { text: "`cxagent mcp`: 10 plugins idle ≤ 0.05 % of one CPU (issue 42)", needs: ["mcplazy.idle.cxagent-mcp.cpu_pct"], ratio: (f) => f["mcplazy.idle.cxagent-mcp.cpu_pct"]!, limit: 0.05, better: "lower", unit: " %" },
  { text: "confined cold load ≤ 1.2× an unconfined one (issue 39)", needs: ["sandbox.cold.confined_ms", "sandbox.cold.unconfined_ms"], ratio: (f) => f["sandbox.cold.confined_ms"]! / f["sandbox.cold.unconfined_ms"]!, limit: 1.2, better: "lower" },
  { text: "warm call on a confined host within 5 % of unconfined, median (issue 39)", needs: ["sandbox.warm.confined_us", "sandbox.warm.unconfined_us"], ratio: (f) => f["sandbox.warm.confined_us"]! / f["sandbox.warm.unconfined_us"]!, limit: 1.05, better: "lower" },
  { text: "crash detection ≤ 10 ms (SPEC §2)", needs: ["crash.detect_ms"], ratio: (f) => f["crash.detect_ms"]!, limit: 10, better: "lower", unit: " ms" },
];

/**
 * "<what>: as built no worse than the same build with its spin off": the median over the rounds of
 * the two builds' ratio within each round (measure.ts sectionFigures); figures without it (the two
 * builds' rounds did not pair up) fall back to the ratio of the two medians.
 */
function noWorse(what: string, pattern: string, better: "lower" | "higher"): Target[] {
  const mine = pattern.replace("%", "cxagent");
  const off = pattern.replace("%", "cxagent-spin0");
  const paired = pattern.replace("%", "cxagent/spin0");
  return [
    {
      text: `${what}: no worse than spin off (≥ ${NO_WORSE}×)`,
      needs: [mine, off],
      ratio: (f) => {
        const ratio = f[paired] ?? f[mine]! / f[off]!;
        return better === "lower" ? 1 / ratio : ratio;
      },
      limit: NO_WORSE,
      better: "higher",
    },
  ];
}

export function isMet(t: Target, value: number): boolean {
  return t.better === "lower" ? value <= t.limit : value >= t.limit;
}
