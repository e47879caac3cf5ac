/**
 * Helpers for driving `cxagent mcp` as MCP clients do: the SDK's Client over a real stdio pipe to
 * a real `cxagent mcp` process, or raw JSON-RPC lines when the framing itself is under test.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { approve, CONFIG_DIR, fixture, ROOT, until } from "../helpers.ts";

export const CLI = [process.execPath, join(ROOT, "src/main.ts")];

/** The processes `pid` started that are still alive (a plugin host is a child of the server). */
export function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) found.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number));
  return found;
}

/** A state folder of the test's own in which `fixtures` (names or paths) are approved. */
export async function approvedState(dir: string, plugins: string[]): Promise<string> {
  const state = join(dir, "state");
  mkdirSync(state, { recursive: true });
  for (const p of plugins) await approve(p.includes("/") ? p : fixture(p), state);
  return state;
}

export interface Connected extends AsyncDisposable {
  client: Client;
  transport: StdioClientTransport;
  pid: number;
  stderr: () => string;
}

/** Starts `cxagent mcp <args…>` and connects an SDK client to it. */
export async function connect(
  args: string[],
  options: { state: string; cwd?: string; capabilities?: ClientCapabilities; bin?: string[]; env?: Record<string, string>; configDir?: string },
): Promise<Connected> {
  const [command, ...prefix] = options.bin ?? CLI;
  const transport = new StdioClientTransport({
    command: command!,
    args: [...prefix, "mcp", ...args, "--state-dir", options.state, "--config-dir", options.configDir ?? CONFIG_DIR],
    cwd: options.cwd ?? ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", ...options.env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "cxagent-test", version: "1.0.0" }, { capabilities: options.capabilities ?? {} });
  await client.connect(transport);
  return {
    client,
    transport,
    pid: transport.pid!,
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      await client.close();
    },
  };
}

/** A `cxagent mcp` process spoken to in raw JSON-RPC lines; every stdout line is kept. */
export function raw(args: string[], options: { state: string; cwd?: string }) {
  const proc = Bun.spawn([...CLI, "mcp", ...args, "--state-dir", options.state, "--config-dir", CONFIG_DIR], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: string[] = [];
  let stderr = "";
  const decoder = new TextDecoder();
  const readers: { cancel(): Promise<void> }[] = [];
  const readAll = async (stream: ReadableStream<Uint8Array>, onText: (text: string) => void) => {
    const reader = stream.getReader();
    readers.push(reader);
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
      if (done) return;
      onText(decoder.decode(value, { stream: true }));
    }
  };
  let partial = "";
  const out = readAll(proc.stdout, (text) => {
    const parts = (partial + text).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  });
  const err = readAll(proc.stderr, (text) => (stderr += text));
  const messages = () => lines.filter((l) => l.trim()).map((l) => JSON.parse(l));
  return {
    proc,
    lines,
    stderr: () => stderr,
    messages,
    send(message: object) {
      proc.stdin.write(JSON.stringify(message) + "\n");
      proc.stdin.flush();
    },
    /** Stops reading stdout and closes our end of the pipe, as a client that went away. */
    async stopReading() {
      await readers[0]!.cancel();
    },
    sendText(text: string) {
      proc.stdin.write(text);
      proc.stdin.flush();
    },
    /** Waits for the response to request `id`. */
    async response(id: number | string, ms = 15_000) {
      await until(() => messages().some((m) => m.id === id && ("result" in m || "error" in m)), ms, `the response to request ${id}; stderr:\n${stderr}`);
      return messages().find((m) => m.id === id && ("result" in m || "error" in m));
    },
    async initialize(protocolVersion = "2025-11-25", capabilities: object = {}) {
      this.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion, capabilities, clientInfo: { name: "raw", version: "1" } } });
      const reply = await this.response(0);
      this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      return reply;
    },
    /** Closes stdin and waits for the exit, with every line read. */
    async end() {
      proc.stdin.end();
      const code = await proc.exited;
      await Promise.all([out, err]);
      if (partial) lines.push(partial);
      return code;
    },
  };
}

/** `cxagent mcp <args…> --http …` started, once it prints where it listens: its URL, its stderr so far, and its end. */
export async function listening(args: string[], options: { state: string; cwd?: string }) {
  const proc = Bun.spawn([...CLI, "mcp", ...args, "--state-dir", options.state, "--config-dir", CONFIG_DIR], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  let stderr = "";
  void (async () => {
    for await (const chunk of proc.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  await until(() => /at (http:\S+\/mcp)/.test(stderr), 15_000, `the server to listen; stderr:\n${stderr}`);
  return {
    url: /at (http:\S+\/mcp)/.exec(stderr)![1]!,
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
