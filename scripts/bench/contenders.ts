/**
 * The contenders that run in the bench's own process: cxagent through its library API, the floor
 * (a Bun child answering JSON lines), and the MCP SDK peer. Each serves the same tools of the same
 * library; the C limit runs as a program of its own (c-limit.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";
import type { Session as SessionType } from "../../src/index.ts";
import { forEachLine } from "./floor-lines.ts";

export type SessionClass = { open: (typeof SessionType)["open"] };

const BENCH = import.meta.dir;
const BUN = process.execPath;

export interface Endpoint {
  /** Calls one tool; resolves with whatever the contender answers. */
  call(tool: string, args: unknown): Promise<unknown>;
  /** The process that serves the calls (its CPU is counted as the host's). */
  pid: number;
}

export interface Contender {
  endpoints: Endpoint[];
  pids: number[];
  close(): Promise<void>;
}

export interface Folders {
  stateDir: string;
  configDir: string;
}

/** One cxagent session with a plugin loaded from each folder. */
export async function cxagent(Session: SessionClass, folders: Folders, pluginFolders: string[], env: Record<string, string> = {}): Promise<Contender> {
  const session = await Session.open({ ...folders, confirmTrust: null, reap: false, env });
  try {
    const plugins = await Promise.all(pluginFolders.map((f) => session.load(f)));
    const endpoints = plugins.map((p) => ({ call: (tool: string, args: unknown) => p.invoke(tool, args as Record<string, unknown>), pid: p.pid! }));
    return { endpoints, pids: endpoints.map((e) => e.pid), close: () => session[Symbol.asyncDispose]() };
  } catch (error) {
    await session[Symbol.asyncDispose]();
    throw error;
  }
}

/** The floor: a Bun child per library, answering JSON lines with ids. */
export async function floor(libraries: string[]): Promise<Contender> {
  const endpoints = await Promise.all(libraries.map(lineClient));
  return {
    endpoints,
    pids: endpoints.map((e) => e.pid),
    close: async () => {
      await Promise.all(endpoints.map((e) => e.close()));
    },
  };
}

async function lineClient(library: string) {
  const proc = Bun.spawn([BUN, join(BENCH, "floor-child.ts"), library], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const waiting = new Map<number, (m: unknown) => void>();
  void forEachLine(proc.stdout, (line) => {
    const message = JSON.parse(line) as { id: number };
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  let id = 0;
  let queued: string[] = [];
  const flush = () => {
    proc.stdin.write(queued.length === 1 ? queued[0]! : queued.join(""));
    queued = [];
    proc.stdin.flush();
  };
  const endpoint = {
    pid: proc.pid,
    call: (tool: string, args: unknown) =>
      new Promise((resolve) => {
        const mine = ++id;
        waiting.set(mine, resolve);
        // requests of one turn of the event loop go out in one write
        if (queued.push(JSON.stringify({ id: mine, kind: "invoke", tool, arguments: args }) + "\n") === 1) queueMicrotask(flush);
      }),
    close: async () => {
      proc.stdin.end();
      await proc.exited;
    },
  };
  await endpoint.call("noop", {}).catch(() => undefined); // started
  return endpoint;
}

/** The MCP SDK peer: an McpServer over stdio per library, called through the SDK's Client. */
export async function mcp(libraries: string[], tools: string[]): Promise<Contender> {
  const clients = await Promise.all(
    libraries.map(async (library) => {
      const transport = new StdioClientTransport({ command: BUN, args: [join(BENCH, "mcp-server.ts"), library, ...tools], stderr: "inherit", maxBufferSize: 64 << 20 });
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(transport);
      return { client, pid: transport.pid! };
    }),
  );
  return {
    endpoints: clients.map(({ client, pid }) => ({ pid, call: (tool: string, args: unknown) => client.callTool({ name: tool, arguments: args as Record<string, unknown> }) })),
    pids: clients.map((c) => c.pid),
    close: async () => {
      await Promise.all(clients.map((c) => c.client.close()));
    },
  };
}
