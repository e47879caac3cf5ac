/**
 * Work a client plugin submits through poll (SPEC §4.5): each submit is checked, then handed to
 * the listeners, or refused in the plugin's log. Submits that arrive before the plugin's manifest
 * is known (between start and the end of loading) wait until it is.
 */
import { preview } from "../protocol/issues.ts";
import type { Submit } from "../protocol/result.ts";

export type RawSubmit = { goal?: unknown; wantResult?: unknown };

export class Submits {
  private readonly listeners = new Set<(submit: Submit) => void>();
  private readonly wakers = new Set<() => void>();
  private early: RawSubmit[] | null = [];
  private client = false;
  private ended = false;

  constructor(
    private readonly plugin: string,
    private readonly log: (level: number, text: string) => void,
  ) {}

  /** The manifest is known: whether the plugin may submit at all. Handles what waited. */
  open(client: boolean): void {
    this.client = client;
    const waiting = this.early ?? [];
    this.early = null;
    for (const raw of waiting) this.receive(raw);
  }

  /** The plugin stopped: iterators end. */
  end(): void {
    this.ended = true;
    for (const wake of this.wakers) wake();
  }

  receive(raw: RawSubmit): void {
    if (this.early) {
      this.early.push(raw);
      return;
    }
    const refuse = (why: string) => this.log(3, `a submit was refused: ${why}`);
    if (!this.client) return refuse("the plugin's manifest does not say client: true, so it may not start work");
    if (raw.wantResult === true) {
      return refuse(`wantResult: true is not supported by this host (the goal ${preview(JSON.stringify(raw.goal), 80)} was dropped, not downgraded)`);
    }
    if (raw.wantResult !== undefined && raw.wantResult !== false) return refuse(`wantResult must be false or left out, not ${preview(JSON.stringify(raw.wantResult), 40)}`);
    if (typeof raw.goal !== "string" || raw.goal.trim() === "") return refuse(`its goal must be a non-empty string, not ${preview(JSON.stringify(raw.goal) ?? "nothing", 40)}`);
    const submit: Submit = { plugin: this.plugin, goal: raw.goal, wantResult: false };
    for (const listener of this.listeners) listener(submit);
  }

  on(listener: (submit: Submit) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The submits as an async iterator, until `signal` aborts or the plugin stops. */
  async *iterate(signal?: AbortSignal): AsyncGenerator<Submit> {
    const queue: Submit[] = [];
    let wake: (() => void) | null = null;
    const off = this.on((s) => {
      queue.push(s);
      wake?.();
    });
    const onWake = () => wake?.();
    signal?.addEventListener("abort", onWake);
    this.wakers.add(onWake);
    try {
      while (!signal?.aborted && !this.ended) {
        if (queue.length) {
          yield queue.shift()!;
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    } finally {
      off();
      signal?.removeEventListener("abort", onWake);
      this.wakers.delete(onWake);
    }
  }
}
