/**
 * A plugin host started before its plugin is known, so that a one-shot command (`cxagent invoke`)
 * pays for one runtime start, not two in a row: the host starts while the CLI loads, reads the
 * plugin's folder and settles trust.
 *
 * It is `cxagent __host --await --parent-pid N` with an empty, sealable in-memory file as fd 3, and
 * it runs nothing but cxagent's own start-up (hardening, the shim) until its first request line
 * gives it its settings (protocol/host-args.ts). The transport writes that line only after it has
 * filled the file with the approved bytes and sealed it, and the host refuses a library whose copy
 * is not sealed: no plugin byte is within its reach before trust was settled. One prepared host at
 * most; it serves only a load whose command and environment are the ones it was started with, and
 * one nobody took ends at its input's end (discardPrepared, or this process's exit), never by a
 * signal.
 */
import type { Subprocess } from "bun";
import { closeSync } from "node:fs";
import { fillAndSeal, holdsExactly, sealableFile } from "./memfd.ts";
import { makeNonDumpable } from "./nondumpable.ts";
import { closePair, socketPair } from "./protocol-socket.ts";
import { withRuntimeTuning } from "./runtime-tuning.ts";
import { NATIVE } from "../kinds/native.ts";

export interface PreparedHost {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  /** This process's end of the socket pair that is the host's stdout, or null: its stdout is a pipe. */
  protocolFd: number | null;
}

let slot: { proc: Subprocess<"pipe", "pipe", "pipe">; fd: number; protocolFd: number | null; command: string; env: string } | null = null;

/** Starts the prepared host; does nothing where there is no memfd, or if it cannot be started. */
export function prepareHost(command: readonly string[], env: Record<string, string>): void {
  if (slot) return;
  const fd = sealableFile("library");
  if (fd === null) return;
  const pair = socketPair(); // its stdout, as every plugin host's (protocol-socket.ts)
  try {
    makeNonDumpable(); // before any plugin host exists (see nondumpable.ts)
    const proc = Bun.spawn({
      cmd: [...command, "--await", "--parent-pid", String(process.pid)],
      env: withRuntimeTuning(env, NATIVE), // it serves the kinds whose profile says preparedHost: native and Cortex, tuned alike
      stdio: ["pipe", pair?.child ?? "pipe", "pipe", fd],
      detached: true, // a session and process group of its own, as every plugin host
    }) as Subprocess<"pipe", "pipe", "pipe">;
    closePair({ child: pair?.child });
    slot = { proc, fd, protocolFd: pair?.parent ?? null, command: JSON.stringify(command), env: JSON.stringify(env) };
  } catch {
    closeSync(fd);
    closePair(pair);
  }
}

/**
 * The prepared host, its fd 3 now holding `bytes`, sealed — if it was started with this command
 * and environment and still runs; otherwise null (and it is discarded). Taken once.
 */
export function takePrepared(command: readonly string[], env: Record<string, string>, bytes: Uint8Array): PreparedHost | null {
  const prepared = slot;
  if (!prepared) return null;
  slot = null;
  const fits = prepared.command === JSON.stringify(command) && prepared.env === JSON.stringify(env) && prepared.proc.exitCode === null && prepared.proc.signalCode === null;
  // Until the host made itself non-dumpable, a process of this user could open its fd 3 through
  // /proc and write there, before the seal; so what is sealed is compared with what was approved.
  const sealed = fits && fillAndSeal(prepared.fd, bytes) && holdsExactly(prepared.fd, bytes);
  closeSync(prepared.fd);
  if (sealed) return { proc: prepared.proc, protocolFd: prepared.protocolFd };
  end(prepared.proc);
  closePair({ parent: prepared.protocolFd });
  return null;
}

/** Ends a prepared host nobody took: its input ends, and it exits. */
export function discardPrepared(): void {
  if (!slot) return;
  closeSync(slot.fd);
  end(slot.proc);
  closePair({ parent: slot.protocolFd });
  slot = null;
}

function end(proc: Subprocess<"pipe", "pipe", "pipe">): void {
  try {
    proc.stdin.end();
  } catch {
    // gone already
  }
}
