/**
 * The accesses a sandboxed plugin host was denied during `cxagent check`'s calls (issue 39 point
 * 5), each named with the manifest line that would allow it. Landlock's audit log names them
 * where the kernel's audit is on (sandbox/audit.ts probes it); otherwise by errno: a tracer
 * (strace, where installed) attached to the host records each file and network call that failed
 * with EACCES or EPERM, and its path or port. Without either, the denials cannot be named, and
 * the check says so.
 */
import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";

/** One denied access: what it was, and the manifest entry that would allow it. */
export interface Denial {
  /** The path, or `TCP port N`, or `an AF_INET socket`. */
  what: string;
  op: "read" | "write" | "connect" | "bind" | "socket";
  errno: string;
  /** The key to add to, `fs.read`, `fs.write`, `net.connect`, `net.bind` or `net`. */
  key: string;
  /** The entry: `"${project}/data.txt"`, `{"port": 443}`, `"any"`. */
  entry: string;
}

/** Starts `strace` attached to `pid` and its threads, writing to `file`; null when no strace is installed. Resolves once attached. */
export async function attachTracer(pid: number, file: string): Promise<{ detach(): Promise<void> } | null> {
  const strace = Bun.which("strace");
  if (strace === null) return null;
  const proc = Bun.spawn([strace, "-f", "-qq", "-e", "trace=%file,%network", "-e", "status=failed", "-o", file, "-p", String(pid)], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && tracerOf(pid) === 0 && proc.exitCode === null) await Bun.sleep(5);
  if (tracerOf(pid) === 0) {
    proc.kill();
    return null;
  }
  return {
    async detach() {
      if (proc.exitCode === null) proc.kill("SIGINT"); // strace detaches and exits
      await Promise.race([proc.exited, Bun.sleep(2000)]);
    },
  };
}

function tracerOf(pid: number): number {
  try {
    return Number(/^TracerPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const WRITES = /^(mkdir|mkdirat|unlink|unlinkat|rmdir|rename|renameat2?|link|linkat|symlink|symlinkat|creat|truncate|mknod|mknodat)$/;

/** Where a denied path is, as a sandbox path: under ${project} or ${cache} when it is, else as it is. */
export function sandboxPath(path: string, places: { project: string; cache?: string }): string {
  for (const [name, folder] of [["project", places.project], ["cache", places.cache]] as const) {
    if (folder === undefined) continue;
    const rel = relative(folder, path);
    if (rel === "") return `\${${name}}`;
    if (!rel.startsWith("..") && !isAbsolute(rel)) return `\${${name}}/${rel}`;
  }
  return path;
}

/** The denials in a trace strace wrote (one line per failed call, `pid name(args) = -1 ERRNO (text)`). */
export function denialsOf(trace: string, places: { project: string; cache?: string; cwd: string }): Denial[] {
  const found = new Map<string, Denial>();
  for (const line of trace.split("\n")) {
    const m = /^(?:\d+\s+)?(\w+)\((.*)\)\s+=\s+-1\s+(EACCES|EPERM)\b/.exec(line);
    if (!m) continue;
    const [, call, args, errno] = m as unknown as [string, string, string, string];
    const denial = denialOf(call, args, errno, places);
    if (denial) found.set(`${denial.key} ${denial.entry}`, denial);
  }
  return [...found.values()];
}

function denialOf(call: string, args: string, errno: string, places: { project: string; cache?: string; cwd: string }): Denial | null {
  if (call === "connect" || call === "bind") {
    const port = /sin6?_port=htons\((\d+)\)/.exec(args)?.[1];
    if (port === undefined) return null; // a Unix socket: never a sandbox's to grant
    const entry = `{"port": ${port}}`;
    return { what: `TCP port ${port}`, op: call, errno, key: `net.${call}`, entry };
  }
  if (call === "socket") {
    const family = /^(AF_INET6?)/.exec(args)?.[1];
    return family ? { what: `an ${family} socket`, op: "socket", errno, key: "net", entry: `{"connect": [{"port": N}]}` } : null;
  }
  const quoted = /"((?:[^"\\]|\\.)*)"/.exec(args)?.[1];
  if (quoted === undefined) return null;
  const path = resolve(places.cwd, quoted.replace(/\\(.)/g, "$1"));
  // The kernel's own files: what is denied there is the runtime's (Bun names a new thread by writing
  // /proc/thread-self/comm), and no sandbox line grants writing them.
  if (/^\/(proc|sys)(\/|$)/.test(path)) return null;
  const write = WRITES.test(call) || (/^open/.test(call) && /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(args));
  const at = sandboxPath(path, places);
  return { what: path, op: write ? "write" : "read", errno, key: write ? "fs.write" : "fs.read", entry: JSON.stringify(at) };
}

/** The sidecar line that would allow `d`: `"sandbox": {"fs": {"read": ["${project}/data.txt"]}}`. */
export function manifestLine(d: Denial): string {
  if (d.key === "net") return `"sandbox": {"net": ${d.entry}} (N: the port it connects to) or {"net": "any"}`;
  const [outer, inner] = d.key.split(".") as [string, string];
  return `"sandbox": {"${outer}": {"${inner}": [${d.entry}]}}`;
}

/** The sentence naming a denial and the line to add. */
export function denialWords(d: Denial): string {
  const what = d.op === "read" || d.op === "write" ? `${d.op} of ${d.what}` : d.op === "socket" ? d.what : `${d.op} to ${d.what}`;
  return `${what} was denied (${d.errno}); ${manifestLine(d)} would allow it`;
}
