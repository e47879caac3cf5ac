/**
 * `cxagent mcp` lazy and frugal (issue 42 point 2), against N minimal MCP SDK servers (one per
 * plugin, as hand-written servers are deployed) under Node and under Bun, in the same run: the
 * whole tree's PSS after tools/list and after one call of each plugin, the time until every tool
 * is listed (spawn → initialize → tools/list, all servers at once), and the CPU the tree uses idle
 * once each plugin has been called. cxagent serves N copies of the trivial native plugin.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Context, Figures } from "./context.ts";
import { cpuPerCall, cpuSample, memoryOf, sampleAdder, sectionFigures } from "./measure.ts";
import { ROOT } from "./setup.ts";

const SERVERS = ["cxagent-mcp", "minimal-node", "minimal-bun"] as const;
type Server = (typeof SERVERS)[number];

interface Tree {
  clients: { client: Client; pid: number; tool: string; args: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * The Bun the Bun servers run: a copy of this benchmark's own, so that the pages of its executable
 * are shared among those servers only, as cxagent's are among its own processes. Run as this
 * process's Bun, a server's PSS counted half of the runtime's code (about 16 MiB of 33 at N = 1)
 * to this benchmark instead.
 */
function peerBun(ctx: Context): string {
  const copy = join(dirname(ctx.ws.stateDir), "bun-peer");
  if (!existsSync(copy)) {
    copyFileSync(process.execPath, copy);
    chmodSync(copy, 0o755);
  }
  return copy;
}

async function openTree(ctx: Context, server: Server, n: number): Promise<Tree> {
  const minimal = join(import.meta.dir, "mcp-minimal.mjs");
  const specs =
    server === "cxagent-mcp"
      ? [{ command: ctx.ws.binary, args: ["mcp", ...ctx.ws.many.slice(0, n), "--state-dir", ctx.ws.stateDir, "--config-dir", ctx.ws.configDir] }]
      : Array.from({ length: n }, () => ({ command: server === "minimal-node" ? "node" : peerBun(ctx), args: [minimal] }));
  const clients = await Promise.all(
    specs.map(async (spec) => {
      const transport = new StdioClientTransport({ ...spec, cwd: ROOT, stderr: "inherit" });
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(transport);
      return { client, pid: transport.pid! };
    }),
  );
  const listed = await Promise.all(clients.map((c) => c.client.listTools()));
  const calls = clients.flatMap((c, i) =>
    server === "cxagent-mcp" ? listed[i]!.tools.map((t) => ({ ...c, tool: t.name, args: {} })) : [{ ...c, tool: "calc_multiply", args: { a: 6, b: 7 } }],
  );
  return { clients: calls, close: async () => void (await Promise.all(clients.map((c) => c.client.close()))) };
}

/** A process and every descendant. */
function tree(pid: number): number[] {
  const out = [pid];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean)) out.push(...tree(Number(child)));
    }
  } catch {
    // ended
  }
  return out;
}

const pssOf = (pids: number[]) => pids.reduce((sum, pid) => sum + (memoryOf(pid).pss || 0), 0);

export async function mcpLazySection(ctx: Context, fig: Figures) {
  // Every N even in quick mode: each target's row needs its figures (test/e2e/bench.test.ts).
  const counts = [1, 5, 20];
  const idleN = 10;
  const idleSeconds = ctx.quick ? 3 : 30;
  const samples = new Map<string, number[]>();
  const add = sampleAdder(samples);
  for (let round = 0; round < ctx.rounds; round++) {
    for (const n of [...new Set([...counts, idleN])].sort((a, b) => a - b)) {
      for (const server of round % 2 ? [...SERVERS].reverse() : SERVERS) {
        if (server === "minimal-node" && Bun.which("node") === null) continue;
        const began = performance.now();
        const t = await openTree(ctx, server, n);
        try {
          add(`mcplazy.${n}.${server}.listed_ms`, performance.now() - began);
          const roots = [...new Set(t.clients.map((c) => c.pid))];
          const all = () => roots.flatMap(tree);
          // The tree's CPU from spawn to every tool listed (a restart by execve included: same task):
          // steadier than the time on a busy machine, where the time is mostly waiting for a CPU.
          add(`mcplazy.${n}.${server}.listed_cpu_ms`, cpuPerCall({ parent: 0, threads: new Map() }, cpuSample(all()), 1).children / 1000);
          if (counts.includes(n)) {
            add(`mcplazy.${n}.${server}.pss_listed_kib`, pssOf(all()));
            // Its anonymous part: PSS also counts the executable's pages, whose share depends on how
            // many processes map the same file (each contender's, its own tree's only: peerBun).
            add(`mcplazy.${n}.${server}.anon_listed_kib`, all().reduce((sum, pid) => sum + (memoryOf(pid).anon || 0), 0));
          }
          for (const c of t.clients) await c.client.callTool({ name: c.tool, arguments: c.args });
          if (counts.includes(n)) add(`mcplazy.${n}.${server}.pss_called_kib`, pssOf(all()));
          if (n === idleN) {
            const pids = all();
            const before = cpuSample(pids);
            await Bun.sleep(idleSeconds * 1000);
            // CPU of the whole tree over the idle time, as % of one CPU
            add(`mcplazy.idle.${server}.cpu_pct`, (cpuPerCall(before, cpuSample(pids), 1).children / (idleSeconds * 1e6)) * 100);
          }
        } finally {
          await t.close();
        }
      }
    }
    ctx.log(`  round ${round + 1}/${ctx.rounds} done`);
  }
  sectionFigures(samples, fig, "", ctx.samples);
}

export function mcpLazyTable(spread: (key: string, scale?: number) => string, has: (prefix: string) => boolean): string[] {
  if (!has("mcplazy.")) return [];
  const mib = 1 / 1024;
  const out = [
    "## `cxagent mcp` lazy: N plugins against N minimal SDK servers (issue 42)",
    "",
    "Whole tree (server and children), MiB of PSS, and of its anonymous part (PSS also counts a share of the executable's pages; the Bun servers run a copy of bun made for them, so each contender's executable is shared within its own tree only: cxagent's among its server and plugin hosts, bun's among the N Bun servers, node's among the N Node servers); time and the tree's CPU from spawn to every tool listed, all servers at once; CPU of the tree idle after one call of each plugin.",
    "",
    "| N | server | PSS after tools/list | anonymous PSS after tools/list | PSS after one call each | all tools listed, ms | CPU until listed, ms |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const n of [1, 5, 10, 20]) {
    for (const s of SERVERS) {
      if (!has(`mcplazy.${n}.${s}.`)) continue;
      const k = (what: string, scale?: number) => (has(`mcplazy.${n}.${s}.${what}`) ? spread(`mcplazy.${n}.${s}.${what}`, scale) : "–");
      out.push(`| ${n} | ${s} | ${k("pss_listed_kib", mib)} | ${k("anon_listed_kib", mib)} | ${k("pss_called_kib", mib)} | ${k("listed_ms")} | ${k("listed_cpu_ms")} |`);
    }
  }
  out.push("", `Idle CPU, % of one CPU, the whole tree: ${SERVERS.filter((s) => has(`mcplazy.idle.${s}.`)).map((s) => `${s} ${spread(`mcplazy.idle.${s}.cpu_pct`)}`).join("; ")}.`, "");
  return out;
}
