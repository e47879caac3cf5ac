/**
 * Where a plugin's text enters the parent (issue 40): every protocol line, stderr line and stream
 * chunk a plugin host sends passes through here before anything else reads it, so results, errors,
 * progress, logs, crash messages — and whatever is later printed, served or written to a file —
 * only ever hold `[REDACTED:<name>]` where a secret's value was. Streamed text is redacted per call
 * across chunk boundaries: a tail that could begin a secret is held until the next chunk, or the
 * call's reply. Also answers a host's request for a secret (only over the protocol, only when asked).
 */
import type { SecretAccess, SecretAnswer, SecretRefusal } from "../secrets/access.ts";
import type { StreamRedactor } from "../secrets/redact.ts";

export class PluginText {
  private readonly streams = new Map<number, StreamRedactor>();

  constructor(private readonly secrets: SecretAccess | undefined) {}

  /** A parsed line, every string redacted; a stream event's text is left to `stream`. */
  message(message: Record<string, unknown>): Record<string, unknown> {
    const redactor = this.secrets?.redactor;
    if (!redactor?.active || message.event === "stream") return message;
    return redactor.value(message);
  }

  /** A line of text (stderr, a line that is not JSON). */
  line(text: string): string {
    return this.secrets?.redactor.text(text) ?? text;
  }

  /** What of call `id`'s next stream chunk can go out now. */
  stream(id: number, text: string): string {
    const redactor = this.secrets?.redactor;
    if (!redactor?.active && !this.streams.has(id)) return text;
    let stream = this.streams.get(id);
    if (!stream) this.streams.set(id, (stream = redactor!.stream()));
    return stream.push(text);
  }

  /** What call `id`'s stream held back, now that it has answered ("" for nothing). */
  end(id: number): string {
    const stream = this.streams.get(id);
    if (!stream) return "";
    this.streams.delete(id);
    return stream.end();
  }

  /**
   * The answer to a host's request for secret `name` (request `seq`): the value, base64, or why
   * not; and what to log (never the value).
   */
  async answer(name: string, seq: number): Promise<{ body: { kind: "secret"; seq: number; value?: string; error?: SecretRefusal }; log: string | null }> {
    const none: SecretAnswer = { ok: false, code: "unavailable", message: `secret '${name}' was asked for by a plugin host that is given none` };
    const answer: SecretAnswer = this.secrets
      ? await this.secrets.request(name).catch((error: unknown) => ({ ok: false, code: "unavailable", message: `secret '${name}' could not be resolved: ${(error as Error).message}` }))
      : none;
    if (answer.ok) return { body: { kind: "secret", seq, value: Buffer.from(answer.value).toString("base64") }, log: null };
    return { body: { kind: "secret", seq, error: answer.code }, log: answer.message };
  }
}
