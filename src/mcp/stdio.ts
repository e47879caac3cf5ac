/**
 * MCP over stdio: newline-delimited JSON-RPC on stdin and stdout. Written here rather than taken
 * from the SDK because the SDK's transport never notices stdin's end (an orphaned server runs on)
 * and lets one line grow without bound. A line over the cap, or one that is not JSON-RPC, is
 * answered with a JSON-RPC error and costs that line only. What the front (stdio-front.ts) does not
 * serve goes to the SDK's side, in order, checked by the SDK's schema (loaded then).
 */
import { StringDecoder } from "node:string_decoder";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";

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
  /** Serves what it can of a message without the SDK (stdio-front.ts): true when it did. */
  front?: (message: unknown) => boolean;
  /** Awaited before the first message goes to the SDK's side (the front connects the SDK's Server then). */
  beforeSdk?: (message: unknown) => Promise<void>;
  /** The messages on their way to the SDK's side, one after the other. */
  private toSdk: Promise<void> = Promise.resolve();
  private schema: typeof JSONRPCMessageSchema | null = null;
  private waiting = 0;
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
    // While messages wait for the SDK's side, those after them wait too: each is answered in turn.
    if (this.waiting === 0 && this.front?.(value)) return;
    this.waiting++;
    this.toSdk = this.toSdk
      .then(async () => {
        if (this.front?.(value)) return;
        if (this.beforeSdk) await this.beforeSdk(value);
        this.schema ??= (await import("@modelcontextprotocol/sdk/types.js")).JSONRPCMessageSchema;
        const parsed = this.schema.safeParse(value);
        if (!parsed.success) return this.reject(-32600, "a line from the client is not a JSON-RPC 2.0 message");
        this.onmessage?.(parsed.data);
      })
      .catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))))
      .finally(() => this.waiting--);
  }

  /** Resolves once every message read so far that went to the SDK's side has reached it. */
  delivered(): Promise<void> {
    return this.toSdk;
  }

  private reject(code: number, message: string) {
    this.onerror?.(new Error(message));
    void this.send({ jsonrpc: "2.0", id: null, error: { code, message } } as unknown as JSONRPCMessage);
  }
}
