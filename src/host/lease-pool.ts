/**
 * The plugin hosts that serve calls under a per-call sandbox lease (issue 39 point 6). A lease is
 * enforced by the kernel on the whole host process, so a call with a lease never runs on the
 * plugin's ordinary host: it runs on one started with exactly that sandbox. Hosts are pooled per
 * plugin (one Plugin is one approved load set: one hash) by their sandbox, so calls under the
 * same lease share one; a host no call has used for `idleMs` is stopped, as are all of them when
 * the plugin stops. A host that ends on its own is forgotten (the next call starts a fresh one)
 * and reported to `onCrash`.
 */
import type { SandboxDeclaration } from "../protocol/sandbox.ts";
import type { Connection } from "./connection.ts";
import type { PluginSpec } from "./plugin-spec.ts";

interface Leased {
  starting: Promise<Connection>;
  connection: Connection | null;
  /** Calls running on it now. */
  busy: number;
  idle: ReturnType<typeof setTimeout> | null;
  /** When its last call ended (performance.now()). */
  lastUsed: number;
  /** Stopped by the pool (idle, or the plugin stopping): its end is no crash. */
  retired: boolean;
}

export interface LeasePoolHooks {
  onCrash(): void;
  onLog(level: number, text: string): void;
}

/** The key a lease's hosts are pooled under: its sandbox, keys in one order. */
export function leaseKey(sandbox: SandboxDeclaration): string {
  const { fs, net, processes, memoryMiB, openFiles } = sandbox;
  return JSON.stringify({ read: [...fs.read].sort(), write: [...fs.write].sort(), net, processes, memoryMiB, openFiles });
}

export class LeasePool {
  private readonly hosts = new Map<string, Leased>();

  private readonly options: { launch(sandbox: SandboxDeclaration): Promise<Connection>; idleMs: number; stopMs: number } & LeasePoolHooks;

  /** `launch` starts a host from `spec` (spawn, handshake, describe, accept, start); the pool gives it the lease's command and sandbox. */
  constructor(spec: PluginSpec, launch: (spec: PluginSpec) => Promise<Connection>, hooks: LeasePoolHooks) {
    const leases = spec.leases!;
    this.options = {
      launch: (sandbox) => {
        const { hostCommand, sandbox: host } = leases.host(sandbox);
        return launch({ ...spec, hostCommand, sandbox: host });
      },
      idleMs: leases.idleMs,
      stopMs: spec.host.stopMs,
      ...hooks,
    };
  }

  /** How many leased hosts run or are starting. */
  get size(): number {
    return this.hosts.size;
  }

  /** The pid of the host serving `sandbox`, or null when none runs. */
  pidOf(sandbox: SandboxDeclaration): number | null {
    const c = this.hosts.get(leaseKey(sandbox))?.connection;
    return c?.alive ? c.pid : null;
  }

  /** Runs `send` on the host of `sandbox`, starting one when none runs. */
  async run<T>(sandbox: SandboxDeclaration, send: (connection: Connection) => Promise<T>): Promise<T> {
    const key = leaseKey(sandbox);
    let host = this.hosts.get(key);
    if (host?.connection && !host.connection.alive) host = undefined;
    if (!host) host = this.start(key, sandbox);
    host.busy++;
    try {
      return await send(await host.starting);
    } finally {
      host.lastUsed = performance.now();
      if (--host.busy === 0 && this.hosts.get(key) === host && !host.idle) this.watchIdle(key, host, this.options.idleMs);
    }
  }

  /** One timer per host, not one per call: when it fires early (a call came meanwhile), it waits out the rest. */
  private watchIdle(key: string, host: Leased, ms: number): void {
    host.idle = setTimeout(() => {
      host.idle = null;
      if (host.busy > 0 || this.hosts.get(key) !== host) return;
      const left = host.lastUsed + this.options.idleMs - performance.now();
      if (left > 1) this.watchIdle(key, host, left);
      else void this.retire(key, host);
    }, ms);
    host.idle.unref?.(); // the plugin's stop ends it too: an idle leased host keeps no process alive
  }

  private start(key: string, sandbox: SandboxDeclaration): Leased {
    const host: Leased = { starting: this.options.launch(sandbox), connection: null, busy: 0, idle: null, lastUsed: 0, retired: false };
    this.hosts.set(key, host);
    host.starting.then(
      (connection) => {
        host.connection = connection;
        connection.whenEnded(({ exit }) => {
          if (this.hosts.get(key) === host) this.hosts.delete(key);
          if (host.retired) return;
          this.options.onLog(3, `a plugin host serving a sandbox lease ended (${exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`}); the next call under that lease starts a new one`);
          this.options.onCrash();
        });
      },
      () => {
        if (this.hosts.get(key) === host) this.hosts.delete(key);
      },
    );
    return host;
  }

  private async retire(key: string, host: Leased, evenBusy = false): Promise<void> {
    if (host.busy > 0 && !evenBusy) return;
    if (this.hosts.get(key) === host) this.hosts.delete(key);
    host.retired = true;
    const connection = host.connection ?? (await host.starting.catch(() => null));
    const error = await connection?.shutdown({ stopMs: this.options.stopMs });
    if (error) this.options.onLog(3, error.message);
  }

  /** Stops every leased host (the plugin stops): calls still running on them fail. */
  async stop(): Promise<void> {
    const all = [...this.hosts];
    for (const [, host] of all) if (host.idle) clearTimeout(host.idle);
    await Promise.all(all.map(([key, host]) => this.retire(key, host, true)));
  }
}
