/**
 * What a crash message quotes of a plugin host's stderr: its last lines, without the runtime's
 * crash banner (runtime-banner.ts), and the fault that banner reported.
 */
import { CxError } from "../errors.ts";
import { RuntimeBannerFilter } from "./runtime-banner.ts";
import type { ExitInfo } from "./transport.ts";

export class StderrTail {
  private readonly kept: string[] = [];
  private readonly banner = new RuntimeBannerFilter();

  /** Keeps the last `size` lines. */
  constructor(private readonly size: number) {}

  /** The fault the runtime reported ("Segmentation fault at address 0x8"), once it has. */
  get fault(): string | null {
    return this.banner.fault;
  }

  /** One line read from the host's stderr (a long one is cut at 400 characters). */
  accept(text: string): void {
    for (const kept of this.banner.accept(text)) {
      this.kept.push(kept.length > 400 ? kept.slice(0, 400) + "…" : kept);
      if (this.kept.length > this.size) this.kept.shift();
    }
  }

  /** The plugin's last lines on stderr, without the runtime's crash banner. */
  lines(): string[] {
    return [...this.kept, ...this.banner.flush()].slice(-this.size);
  }

  /** The fault as the runtime reported it: " (Segmentation fault at address 0x8)". */
  faultText(): string {
    return this.banner.fault ? ` (${this.banner.fault})` : "";
  }

  tailText(): string {
    const lines = this.lines();
    return lines.length ? `; its last output:\n${lines.map((l) => `  | ${l}`).join("\n")}` : "";
  }
}

export const describeExit = (exit: ExitInfo) => (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`);

/** E_CRASHED: how the host ended, `where` ("during …", "while … was running"), the fault and the plugin's last lines. */
export function crashError(label: string, exit: ExitInfo, where: string, tail: StderrTail, hint: string): CxError {
  if (exit.refused) {
    return new CxError("E_SANDBOX", `plugin '${label}' was not started: its sandbox's ${exit.refused.layer} layer could not be applied (${exit.refused.why})`, {
      hint: `cxagent never runs a plugin less confined than it declared; to run it without that layer, add "${exit.refused.layer}" to "sandboxAccepts" of its entry in config.json`,
      details: { plugin: label, layer: exit.refused.layer, why: exit.refused.why },
    });
  }
  if (exit.limit) {
    return new CxError("E_LIMIT", `plugin '${label}' was stopped by its sandbox's ${exit.limit.limit} limit (${exit.limit.value}) ${where}${tail.tailText()}`, {
      hint: `the plugin declares "${exit.limit.limit === "memory" ? "memoryMiB" : exit.limit.limit}" in its sandbox; the next call starts a fresh plugin host`,
      next: { do: "see-output", plugin: label },
      details: { limit: exit.limit.limit, value: exit.limit.value, ...(exit.limit.how ? { how: exit.limit.how } : {}), exitCode: exit.code, signal: exit.signal },
    });
  }
  return new CxError("E_CRASHED", `plugin '${label}' crashed (${describeExit(exit)}) ${where}${tail.faultText()}${tail.tailText()}`, {
    hint,
    next: { do: "see-output", plugin: label },
    details: { exitCode: exit.code, signal: exit.signal, fault: tail.fault, stderr: tail.lines() },
  });
}
