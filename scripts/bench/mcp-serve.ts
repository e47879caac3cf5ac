/**
 * `cxagent mcp` against a hand-written MCP server (issue 42 point 1): the compiled binary serving
 * the calculator over stdio, and a minimal @modelcontextprotocol/sdk server doing calc_multiply in
 * JS (mcp-minimal.mjs) under Node and under Bun. Beside them, floors that show where the targets
 * lie: a server that checks nothing (mcp-floor.mjs under Bun; mcp-floor.c, the same in C), and the
 * Bun one behind a relay process (mcp-relay.mjs), the least a server with the tool in a second
 * process can cost. All are driven by the SDK's Client over stdio, fresh processes every round, in
 * interleaved rounds. Figures: sequential mean and median µs, and calls/s with 16 in flight, each
 * the median over the rounds; the targets take their ratios within one run (targets.ts); the ratio
 * of each contender to each minimal server is also taken within each round.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Context, Figures } from "./context.ts";
import { inFlight, inTurn, median, sampleAdder, sectionFigures, sequential } from "./measure.ts";
import { ROOT } from "./setup.ts";

export const MCP_SERVERS = ["cxagent-mcp", "minimal-node", "minimal-bun", "floor-bun", "floor-c", "relay-bun"] as const;
type McpServer = (typeof MCP_SERVERS)[number];
const LABELS: Record<McpServer, string> = {
  "cxagent-mcp": "`cxagent mcp` (compiled), the calculator's calc_multiply",
  "minimal-node": "minimal SDK server, multiplication in JS, Node",
  "minimal-bun": "minimal SDK server, multiplication in JS, Bun",
  "floor-bun": "floor: one process that checks nothing, no SDK, Bun",
  "floor-c": "floor in C: the same without a JavaScript runtime",
  "relay-bun": "floor with the tool in a second process: a relay in front of the floor, Bun",
};
/** The servers each contender is compared with, round by round, and the others. */
const MINIMAL: readonly McpServer[] = ["minimal-node", "minimal-bun"];
const COMPARED = MCP_SERVERS.filter((name) => !MINIMAL.includes(name));
const SCRIPTS: Partial<Record<McpServer, string>> = { "minimal-node": "mcp-minimal.mjs", "minimal-bun": "mcp-minimal.mjs", "floor-bun": "mcp-floor.mjs", "relay-bun": "mcp-relay.mjs" };

interface Served {
  client: Client;
  pid: number;
}

/** mcp-floor.c, built with cc into the workspace once; null without a C compiler (its contender is left out). */
function floorC(ctx: Context): string | null {
  const binary = join(dirname(ctx.ws.stateDir), "mcp-floor");
  if (existsSync(binary)) return binary;
  const built = Bun.spawnSync([process.env.CC ?? "cc", "-O2", "-o", binary, join(import.meta.dir, "mcp-floor.c")], { stdout: "ignore", stderr: "inherit" });
  return built.success ? binary : null;
}

async function open(ctx: Context, name: McpServer): Promise<Served> {
  const { ws } = ctx;
  const command =
    name === "cxagent-mcp"
      ? { command: ws.binary, args: ["mcp", ws.calculator, "--state-dir", ws.stateDir, "--config-dir", ws.configDir] }
      : name === "floor-c"
        ? { command: floorC(ctx)!, args: [] }
        : { command: name === "minimal-node" ? "node" : process.execPath, args: [join(import.meta.dir, SCRIPTS[name]!)] };
  const transport = new StdioClientTransport({ ...command, cwd: ROOT, stderr: "inherit" });
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(transport);
  return { client, pid: transport.pid! };
}

export async function mcpServeSection(ctx: Context, fig: Figures) {
  const seqN = ctx.quick ? 500 : 3000;
  const flightN = ctx.quick ? 2000 : 10_000;
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  for (let round = 0; round < ctx.rounds; round++) {
    const opened: { name: McpServer; s: Served }[] = [];
    const thisRound = new Map<string, number>();
    try {
      // Without Node on PATH, or a C compiler, its contender (and its targets' rows: "no figures") is left out.
      const servers = MCP_SERVERS.filter((name) => (name !== "minimal-node" || Bun.which("node") !== null) && (name !== "floor-c" || floorC(ctx) !== null));
      for (const name of inTurn(servers, round)) opened.push({ name, s: await open(ctx, name) });
      for (const { name, s } of opened) {
        const call = (i: number) =>
          s.client.callTool({ name: "calc_multiply", arguments: { a: i, b: 7 } }).then((r) => {
            if (r.isError) throw new Error(`${name}: calc_multiply failed: ${JSON.stringify(r.content)}`);
          });
        await call(0); // a plugin host started lazily is up before the processes are counted
        const pids = [s.pid, ...childrenOf(s.pid)];
        const q = await sequential(call, seqN, pids);
        add(`mcpserve.seq.${name}.mean_us`, q.meanUs);
        thisRound.set(`seq.${name}`, q.meanUs);
        add(`mcpserve.seq.${name}.median_us`, q.medianUs);
        add(`mcpserve.seq.${name}.cpu_server_us`, q.childCpuUs);
        const t = await inFlight(call, flightN, 16, pids);
        add(`mcpserve.w16.${name}.calls_s`, t.callsPerSec);
        thisRound.set(`w16.${name}`, t.callsPerSec);
        add(`mcpserve.w16.${name}.cpu_server_us`, t.childCpuUs);
      }
    } finally {
      for (const { s } of opened) await s.client.close();
    }
    for (const name of COMPARED) {
      for (const base of MINIMAL) {
        if (!thisRound.has(`seq.${base}`)) continue;
        for (const what of ["seq", "w16"]) add(`mcpserve.ratio.${what}.${name}.${base}`, thisRound.get(`${what}.${name}`)! / thisRound.get(`${what}.${base}`)!);
      }
    }
    const m = (key: string) => median(samples.get(key)!).toFixed(0);
    ctx.log(`  round ${round + 1}/${ctx.rounds}: seq mean cxagent mcp ${m("mcpserve.seq.cxagent-mcp.mean_us")} µs, minimal Bun ${m("mcpserve.seq.minimal-bun.mean_us")} µs`);
  }
  sectionFigures(samples, fig, "", ctx.samples);
}

/** A process's children (for `cxagent mcp`, its plugin hosts). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      found.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number));
    }
  } catch {
    // it ended: no children to count
  }
  return found;
}

/** The section's table for BENCHMARKS.md. */
export function mcpServeTable(spread: (key: string) => string): string[] {
  const out = [
    "## `cxagent mcp` against a hand-written MCP server (issue 42)",
    "",
    "Each driven by the MCP SDK's Client over stdio; the server's CPU per call includes, for `cxagent mcp`, its plugin host's.",
    "",
    "| server | sequential mean µs | median µs | server CPU/call µs | 16 in flight, calls/s | server CPU/call µs |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const name of MCP_SERVERS) {
    const k = (what: string) => spread(`mcpserve.${what.replace("%", name)}`);
    out.push(`| ${LABELS[name]} | ${k("seq.%.mean_us")} | ${k("seq.%.median_us")} | ${k("seq.%.cpu_server_us")} | ${k("w16.%.calls_s")} | ${k("w16.%.cpu_server_us")} |`);
  }
  out.push(
    "",
    "Each against a minimal server, the ratio taken within each round and its median over the rounds (the targets: sequential mean ≤ 0.7×, calls/s at 16 in flight ≥ 1.5×):",
    "",
    "| server | sequential mean ÷ Node's | ÷ Bun's | calls/s at 16 in flight ÷ Node's | ÷ Bun's |",
    "| --- | --- | --- | --- | --- |",
  );
  for (const name of COMPARED) {
    const k = (what: string, base: McpServer) => spread(`mcpserve.ratio.${what}.${name}.${base}`);
    out.push(`| ${LABELS[name]} | ${k("seq", "minimal-node")} | ${k("seq", "minimal-bun")} | ${k("w16", "minimal-node")} | ${k("w16", "minimal-bun")} |`);
  }
  out.push("");
  return out;
}
