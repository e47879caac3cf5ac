/**
 * The prepared plugin host of `cxagent invoke` (src/host/prepared.ts): started before the CLI has
 * read the plugin or settled trust, it serves the call from a sealed copy of the approved bytes,
 * runs nothing of an unapproved plugin, refuses a copy that is not sealed, and ends when nobody
 * takes it. Real CLI processes, a real plugin host, real /proc.
 */
import type { FileSink } from "bun";
import { describe, expect, test } from "bun:test";
import { closeSync, constants, existsSync, openSync, readdirSync, readFileSync, readlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { sealedCopy } from "../../src/host/memfd.ts";
import { discardPrepared, prepareHost, takePrepared } from "../../src/host/prepared.ts";
import { SHIM_OPTION } from "../../src/protocol/host-args.ts";
import { hostCommand } from "../../src/session/host-command.ts";
import { pluginHostEnv } from "../../src/session/host-env.ts";
import { alive, approve, CONFIG_DIR, copyFixture, fixture, fixtureLibrary, STATE_DIR, tempDir, until } from "../helpers.ts";

/** The plugin hosts a process started, by their command lines. */
function hostsOf(parent: number): { pid: number; argv: string[] }[] {
  const found: { pid: number; argv: string[] }[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").filter(Boolean);
      const at = argv.indexOf("--parent-pid");
      if (argv.includes("__host") && argv[at + 1] === String(parent)) found.push({ pid: Number(name), argv });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Starts `cxagent __host --await` as a parent would, with `fd` as its fd 3 (and `stdin`, if given, as its fd 0); its first stdout line. */
async function awaitingHost(fd: number, env: Record<string, string> = {}, stdin?: number) {
  const proc = Bun.spawn({
    cmd: [...hostCommand(), "--await", "--parent-pid", String(process.pid)],
    env: pluginHostEnv(process.env, env),
    stdio: [stdin ?? "pipe", "pipe", "pipe", fd],
  });
  closeSync(fd);
  if (stdin !== undefined) closeSync(stdin);
  const input = proc.stdin as FileSink; // unused when `stdin` was given
  // The first line only (or "" at the end of output): a host that went on to serve would never end it.
  const firstLine = async () => {
    const reader = proc.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    return text.split("\n")[0] ?? "";
  };
  return { proc, input, firstLine };
}

describe("cxagent invoke's prepared plugin host", () => {
  test("serves the call: started with --await before the load, the library mapped from its sealed in-memory copy", async () => {
    await approve(fixture("slow-invoke"));
    const proc = Bun.spawn({
      cmd: [process.execPath, join(import.meta.dir, "../../src/main.ts"), "invoke", fixture("slow-invoke"), "slow_invoke", "--args", '{"ms":1500}'],
      env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR },
      stdout: "pipe",
      stderr: "pipe",
    });
    let host: { pid: number; argv: string[] } | undefined;
    await until(() => {
      host = hostsOf(proc.pid).find((h) => readMaps(h.pid).some((m) => m.includes("memfd:cxagent:library")));
      return host !== undefined;
    }, 10_000, "the plugin host to map the library");
    // (from a checkout, the built shim's path comes first: protocol/host-args.ts)
    expect(host!.argv.slice(host!.argv.indexOf("__host") + 1).filter((a) => !a.startsWith(SHIM_OPTION))).toEqual(["--await", "--parent-pid", String(proc.pid)]);
    const maps = readMaps(host!.pid);
    expect(maps.some((m) => m.includes("/memfd:cxagent:library"))).toBe(true);
    expect(maps.some((m) => m.includes(fixtureLibrary("slow-invoke")))).toBe(false); // never the file itself
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: "slept 1500 ms" });
    expect(alive(host!.pid)).toBe(false);
  });

  test("an unapproved plugin: refused, its constructor never ran, and the prepared host ends with the command", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("ctor-marker", dir.path);
    const proc = Bun.spawn({
      cmd: [process.execPath, join(import.meta.dir, "../../src/main.ts"), "invoke", plugin, "ctor_marker", "--json"],
      env: { ...process.env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, CXAGENT_FX_MARKER: marker, CXAGENT_PASS_ENV: "CXAGENT_FX_MARKER" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(4);
    expect(JSON.parse(stdout).error.code).toBe("E_NOT_APPROVED");
    expect(existsSync(marker)).toBe(false);
    await until(() => hostsOf(proc.pid).length === 0, 5000, "the prepared host to end");
  });

  test("a copy of the library that is not sealed is refused before it is loaded", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const library = fixtureLibrary("ctor-marker");
    const { proc, input, firstLine } = await awaitingHost(openSync(library, "r"), { CXAGENT_FX_MARKER: marker });
    input.write(JSON.stringify({ argv: [library, "--library-fd", "3", "--parent-pid", String(process.pid)], cwd: dir.path }) + "\n");
    input.flush();
    const line = JSON.parse(await firstLine());
    expect(line).toMatchObject({ ready: false, reason: "load" });
    expect(line.error).toContain("descriptor 3, which should hold a sealed copy of its approved bytes, is not sealed");
    expect(existsSync(marker)).toBe(false);
    expect(await proc.exited).toBe(1);
  });

  test("a settings line that is not one is refused, naming what it must be", async () => {
    const { proc, input, firstLine } = await awaitingHost(openSync("/dev/null", "r"));
    input.write("{\"argv\": 3}\n");
    input.flush();
    const line = JSON.parse(await firstLine());
    expect(line.ready).toBe(false);
    expect(line.error).toContain('its settings line must be {"argv": [strings], "cwd": string}');
    expect(await proc.exited).toBe(1);
  });

  // The host reads its settings line and nothing after it: what follows is the shim's. On a socket
  // (the parent's pipes, on Linux) it looks ahead and takes the line in one read; on a pipe it reads
  // a byte at a time. Either way, requests written together with the line are served, not lost.
  for (const channel of ["socket", "pipe"] as const) {
    test(`requests written with the settings line in one write are served (stdin a ${channel})`, async () => {
      using dir = tempDir();
      const library = fixtureLibrary("echo");
      const copy = sealedCopy(readFileSync(library), "library")!;
      let fifo: { write: number; read: number } | null = null;
      if (channel === "pipe") {
        const path = join(dir.path, "fifo");
        expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);
        // Non-blocking, as the parent's end may be: the host waits in poll(2) until the line comes.
        const read = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
        fifo = { read, write: openSync(path, "w") };
      }
      const { proc, input } = await awaitingHost(copy, {}, fifo?.read);
      const settings = JSON.stringify({ argv: [library, "--library-fd", "3", "--parent-pid", String(process.pid)], cwd: dir.path });
      const start = JSON.stringify({ id: 1, kind: "start", context: { workingDirectory: dir.path, settings: {}, hostContract: 4 } });
      const invoke = JSON.stringify({ id: 2, kind: "invoke", tool: "echo_this", arguments: { said: "after the settings" } });
      const text = [settings, start, invoke, ""].join("\n");
      if (fifo) {
        writeSync(fifo.write, text);
        closeSync(fifo.write);
      } else {
        input.write(text);
        input.end();
      }
      const lines = (await new Response(proc.stdout).text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const replies = lines.filter((l) => "id" in l);
      expect(lines.find((l) => "ready" in l)?.ready).toBe(true);
      expect(replies.map((r) => [r.id, r.ok])).toEqual([[1, true], [2, true]]);
      expect(JSON.stringify(replies[1].result)).toContain("after the settings");
      expect(await proc.exited).toBe(0);
    });
  }

  test("it is taken only by a load with the command and the environment it was started with", async () => {
    const bytes = readFileSync(fixtureLibrary("echo"));
    const env = pluginHostEnv(process.env);
    const seen = new Set(hostsOf(process.pid).map((h) => h.pid));
    /** The plugin host this process started last, once its command line shows it. */
    const newHost = async () => {
      let pid: number | undefined;
      await until(() => (pid = hostsOf(process.pid).find((h) => !seen.has(h.pid))?.pid) !== undefined, 5000, "the prepared host to start");
      seen.add(pid!);
      return pid!;
    };
    // each differs from what the host was started with in one value, or one name
    for (const other of [{ ...env, PATH: `${env.PATH}:/x` }, { ...env, CXAGENT_EXTRA: "1" }, Object.fromEntries(Object.entries(env).filter(([name]) => name !== "PATH"))]) {
      prepareHost(hostCommand(), env);
      const pid = await newHost();
      expect(takePrepared(hostCommand(), other, bytes)).toBeNull();
      await until(() => !alive(pid!), 5000, "the prepared host nobody could take to end");
    }
    prepareHost(hostCommand(), env);
    expect(takePrepared([...hostCommand(), "--other"], env, bytes)).toBeNull();
    prepareHost(hostCommand(), env);
    const taken = takePrepared(hostCommand(), { ...env }, bytes);
    expect(taken).not.toBeNull();
    taken!.proc.stdin.end();
    await taken!.proc.exited;
    discardPrepared();
  });

  test("one at a time; one that has died is not taken; and its library file does not stay open here", async () => {
    const bytes = readFileSync(fixtureLibrary("echo"));
    const env = pluginHostEnv(process.env);
    // the sealable file it was given as fd 3 (the runtime's own pipes to it close when it collects them)
    const fds = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith("/memfd:cxagent:library");
        } catch {
          return false;
        }
      }).length;
    const seen = new Set(hostsOf(process.pid).map((h) => h.pid));
    const started = () => hostsOf(process.pid).filter((h) => !seen.has(h.pid)).map((h) => h.pid);
    const before = fds();
    prepareHost(hostCommand(), env);
    prepareHost(hostCommand(), env); // a second call while one waits starts nothing
    await until(() => started().length > 0, 5000, "the prepared host to start");
    await Bun.sleep(100);
    expect(started()).toHaveLength(1);
    const [pid] = started();
    // it dies before anyone takes it (killed, or it exited): not taken, and its descriptors go
    process.kill(pid!, "SIGKILL");
    await until(() => !alive(pid!), 5000, "the prepared host to die");
    await Bun.sleep(50); // its exit is collected by the runtime
    expect(takePrepared(hostCommand(), env, bytes)).toBeNull();
    expect(fds()).toBe(before);
    // this process's end of each one's socket pair (its stdout) is closed with it
    const sockets = () => readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:");
      } catch {
        return false;
      }
    }).length;
    const socketsBefore = sockets();
    // one discarded, and one refused for another environment: nothing left open either
    // (the runtime's own socket to its stdin closes once it has collected the host's exit)
    prepareHost(hostCommand(), env);
    discardPrepared();
    await until(() => sockets() === socketsBefore, 10_000, "the discarded host's sockets to close");
    prepareHost(hostCommand(), env);
    expect(takePrepared(hostCommand(), { ...env, OTHER: "1" }, bytes)).toBeNull();
    expect(fds()).toBe(before);
    await until(() => sockets() === socketsBefore, 10_000, "the refused host's sockets to close");
    // a command that cannot be started: nothing prepared, its file and its socket pair closed
    prepareHost(["/nonexistent/cxagent-host"], env);
    expect(fds()).toBe(before);
    expect(sockets()).toBe(socketsBefore);
    expect(takePrepared(["/nonexistent/cxagent-host"], env, bytes)).toBeNull();
  }, 30_000);

  test("preparing a host first makes this process non-dumpable (before any plugin host exists)", () => {
    const script = `
      import { linuxLibc } from ${JSON.stringify(join(import.meta.dir, "../../src/libc.ts"))};
      import { discardPrepared, prepareHost } from ${JSON.stringify(join(import.meta.dir, "../../src/host/prepared.ts"))};
      const dumpable = () => linuxLibc()!.prctl(3, 0, 0, 0, 0); // PR_GET_DUMPABLE
      const before = dumpable();
      prepareHost(["/bin/cat"], {});
      console.log(JSON.stringify([before, dumpable()]));
      discardPrepared();`;
    const r = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    expect(JSON.parse(r.stdout.toString())).toEqual([1, 0]);
  });

  test("one whose unsealed file another process of the user wrote to before it was filled is not taken, and ends", async () => {
    const env = pluginHostEnv(process.env);
    const bytes = readFileSync(fixtureLibrary("noop"));
    const before = new Set(hostsOf(process.pid).map((h) => h.pid));
    prepareHost(hostCommand(), env);
    let pid: number | undefined;
    await until(() => (pid = hostsOf(process.pid).find((h) => !before.has(h.pid))?.pid) !== undefined, 5000, "the prepared host to start");
    let fd: number;
    try {
      fd = openSync(`/proc/${pid}/fd/3`, constants.O_WRONLY);
    } catch (error) {
      discardPrepared();
      return console.error(`skipping: this process cannot open the prepared host's fd 3 (${(error as Error).message}); as root it can`);
    }
    // more than the approved bytes: what the parent writes covers only their length
    writeSync(fd, Buffer.alloc(bytes.length + 4096, 0x41), 0, bytes.length + 4096, 0);
    closeSync(fd);
    expect(takePrepared(hostCommand(), env, bytes)).toBeNull();
    await until(() => !alive(pid!), 5000, "the prepared host nobody could take to end");
  });

  test("one nobody takes ends at the end of its input, having written nothing", async () => {
    const { proc, input, firstLine } = await awaitingHost(openSync("/dev/null", "r"));
    input.end();
    expect(await firstLine()).toBe("");
    expect(await proc.exited).toBe(0);
  });
});

function readMaps(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/maps`, "utf8").split("\n");
  } catch {
    return [];
  }
}
