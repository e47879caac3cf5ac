/**
 * MCP over stdio: newline-delimited JSON-RPC on stdin and stdout. Written here rather than taken
 * from the SDK because the SDK's transport never notices stdin's end (an orphaned server runs on)
 * and lets one line grow without bound. A line over the cap, or one that is not JSON-RPC, is
 * answered with a JSON-RPC error and costs that line only.
 */
import { StringDecoder } from "node:string_decoder";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { cancelledId, fastCallOf, type FastCalls } from "./fast-call.ts";

/** The longest line read from the client (the plugin protocol's cap, SPEC §12). */
export const STDIO_LINE_CAP = 64 * 1024 * 1024;

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /**
   * stdin ended (or failed). The connection stays open so calls in flight can still answer: a
   * client that closed its end may still be reading; the owner decides when to close.
   */
  onend?: (why: string) => void;
  /** Serves plainly well-formed `tools/call` requests without the SDK's checks (fast-call.ts). */
  fast?: FastCalls;
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";
  private skipping = false;
  private closed = false;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    /** Writes one whole frame to the client. */
    private readonly write: (frame: string) => void,
    private readonly lineCap = STDIO_LINE_CAP,
  ) {}

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.on("error", this.onInputError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return;
    this.write(JSON.stringify(message) + "\n");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.off("error", this.onInputError);
    this.onclose?.();
  }

  private readonly onData = (chunk: Buffer | string) => {
    let text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n")) {
      const line = this.pending + text.slice(0, at);
      text = text.slice(at + 1);
      this.pending = "";
      if (this.skipping) this.skipping = false;
      else this.receive(line);
    }
    if (this.skipping) return;
    this.pending += text;
    if (this.pending.length > this.lineCap) {
      this.pending = "";
      this.skipping = true;
      this.reject(-32600, `a message over ${this.lineCap >= 1 << 20 ? `${this.lineCap >> 20} MiB` : `${this.lineCap} characters`} was dropped`);
    }
  };

  private readonly onEnd = () => {
    this.onend?.("stdin closed");
  };

  private readonly onInputError = (error: Error) => {
    this.onerror?.(error);
    this.onend?.(`stdin failed: ${error.message}`);
  };

  private receive(line: string) {
    if (!line.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return this.reject(-32700, "a line from the client is not JSON");
    }
    if (this.fast) {
      const call = fastCallOf(value);
      if (call) return this.fast.call(call);
      const cancelled = cancelledId(value);
      if (cancelled) this.fast.cancel(cancelled.id, cancelled.reason);
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) return this.reject(-32600, "a line from the client is not a JSON-RPC 2.0 message");
    this.onmessage?.(parsed.data);
  }

  private reject(code: number, message: string) {
    this.onerror?.(new Error(message));
    void this.send({ jsonrpc: "2.0", id: null, error: { code, message } } as unknown as JSONRPCMessage);
  }
}
