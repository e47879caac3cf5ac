/**
 * Resolving one binding to its value (issue 40), in the cxagent process only: a file (a regular
 * file of the user's, readable by nobody else), a command (run without a shell; its stdout), or
 * one of cxagent's own environment variables. One trailing newline is dropped. Nothing here ever
 * puts the value in a message: a failure names the binding and what to do.
 */
import { spawn } from "node:child_process";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import type { SecretBinding } from "../discovery/secret-bindings.ts";
import { expandPath } from "../discovery/paths.ts";

/** Shorter values would turn common words into markers; they are refused at use. */
export const MIN_SECRET_BYTES = 8;
/** Larger than any token; a larger value is refused, not read. */
export const MAX_SECRET_BYTES = 64 * 1024;
/** How long a command binding may run. */
export const COMMAND_MS = 10_000;

export type Resolution = { ok: true; value: Uint8Array } | { ok: false; message: string };

/** The binding in words, for listings and messages (never the value). */
export function describeBinding(binding: SecretBinding): string {
  if ("file" in binding) return `file ${binding.file}`;
  if ("command" in binding) return `command ${binding.command.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ")}`;
  return `environment variable ${binding.env}`;
}

/** Resolves `binding`; a command runs without blocking this process (a keyring may wait for a person). */
export async function resolveBinding(binding: SecretBinding, env: NodeJS.ProcessEnv = process.env): Promise<Resolution> {
  const got = "file" in binding ? fromFile(expandPath(binding.file, env)) : "command" in binding ? await fromCommand(binding.command, env) : fromEnv(binding.env, env);
  if (!got.ok) return got;
  const value = trimNewline(got.value);
  if (value.length < MIN_SECRET_BYTES) {
    return { ok: false, message: `its value is ${value.length} byte${value.length === 1 ? "" : "s"} long, shorter than the ${MIN_SECRET_BYTES} a secret must have (redacting a shorter one would hide ordinary words)` };
  }
  if (value.length > MAX_SECRET_BYTES) return { ok: false, message: `its value is over ${MAX_SECRET_BYTES} bytes` };
  return { ok: true, value };
}

function trimNewline(value: Uint8Array): Uint8Array {
  let end = value.length;
  if (end && value[end - 1] === 0x0a) end--;
  if (end && value[end - 1] === 0x0d) end--;
  return value.subarray(0, end);
}

function fromFile(path: string): Resolution {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return { ok: false, message: `the file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, message: `${path} is not a regular file` };
    const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
    if (stat.mode & 0o077) {
      return { ok: false, message: `the file ${path} has mode ${mode}: others may read or change it; run chmod 600 ${path}` };
    }
    const uid = process.getuid?.();
    if (uid !== undefined && stat.uid !== uid) return { ok: false, message: `the file ${path} belongs to uid ${stat.uid}, not to you (uid ${uid})` };
    if (stat.size > MAX_SECRET_BYTES + 2) return { ok: false, message: `the file ${path} is over ${MAX_SECRET_BYTES} bytes` };
    const buffer = Buffer.alloc(MAX_SECRET_BYTES + 3);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0 || length + n >= buffer.length) break;
      length += n;
    }
    return { ok: true, value: buffer.subarray(0, length) };
  } finally {
    closeSync(fd);
  }
}

function fromCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<Resolution> {
  const shown = describeBinding({ command: argv });
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let why: string | null = null;
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env, shell: false });
    const timer = setTimeout(() => {
      why = `it did not finish within ${COMMAND_MS / 1000} s`;
      child.kill("SIGKILL");
    }, COMMAND_MS);
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SECRET_BYTES + 2) {
        why = `it wrote over ${MAX_SECRET_BYTES} bytes`;
        child.kill("SIGKILL");
      } else out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => void (err.length < 16 && err.push(chunk)));
    child.on("error", (error: NodeJS.ErrnoException) => {
      why ??= error.code === "ENOENT" ? "the program was not found" : error.message;
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      const value = Buffer.concat(out);
      if (why) return resolve({ ok: false, message: `${shown} failed: ${why}` });
      if (status !== 0) {
        const said = Buffer.concat(err).toString("utf8").trim().split("\n")[0]?.slice(0, 200);
        return resolve({ ok: false, message: `${shown} exited with ${status ?? `signal ${signal}`}${said ? ` (it said: ${said})` : ""}` });
      }
      resolve({ ok: true, value: new Uint8Array(value) });
    });
  });
}

function fromEnv(name: string, env: NodeJS.ProcessEnv): Resolution {
  const value = env[name];
  if (value === undefined) return { ok: false, message: `the environment variable ${name} is not set in cxagent's environment` };
  return { ok: true, value: new TextEncoder().encode(value) };
}
