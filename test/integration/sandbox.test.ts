/**
 * The kernel sandbox (issue 39), attempted as an attacker would: every test makes the plugin try
 * what its declaration does not allow and asserts the kernel stopped it, and looks at the host's
 * /proc for each layer, so that a sandbox that never came up fails here (each layer has a guard in
 * scripts/guards.list.ts that removes it and must turn a test here red).
 *
 * test/fixtures/sandbox-probe: write ${project}/lease, net "none", memoryMiB 256, processes 16.
 * test/fixtures/sandbox-port: net {connect: [{port: 47813}]}.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Plugin } from "../../src/index.ts";
import { crashError, StderrTail } from "../../src/host/stderr-tail.ts";
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE } from "../../src/protocol/sandbox.ts";
import { nativeLauncher } from "../../src/sandbox/native-launcher.ts";
import { approve, fixture, fixtureLibrary, openSession, refusal, ROOT, RUNTIME_DIR, tempDir, writeModule } from "../helpers.ts";

const project = tempDir("cxagent-sandbox-");
const secret = join(project.path, "secret.txt");
beforeAll(async () => {
  mkdirSync(join(project.path, "lease"));
  writeFileSync(secret, "secret\n");
  await approve(fixture("sandbox-probe"));
  await approve(fixture("sandbox-port"));
});
afterAll(() => project[Symbol.dispose]());

async function attempt(plugin: Plugin, args: Record<string, unknown>): Promise<number> {
  return ((await plugin.invoke("try", args)).output as { errno: number }).errno;
}

const EACCES = 13, EPERM = 1, EXDEV = 18;

test("a confined native plugin writes its lease, and reading a sibling, .., a symbolic link out or a hard link out all fail", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  expect(await attempt(plugin, { op: "write", path: join(project.path, "lease/report.md") })).toBe(0);
  expect(readFileSync(join(project.path, "lease/report.md"), "utf8")).toBe("report\n");
  expect(await attempt(plugin, { op: "read", path: secret })).toBe(EACCES);
  expect(await attempt(plugin, { op: "read", path: join(project.path, "lease/../secret.txt") })).toBe(EACCES);
  expect(await attempt(plugin, { op: "write", path: join(project.path, "beside.txt") })).toBe(EACCES);
  expect(await attempt(plugin, { op: "symlink", path: join(project.path, "lease/out"), to: "../secret.txt" })).toBe(EACCES);
  expect([EACCES, EXDEV]).toContain(await attempt(plugin, { op: "link", path: join(project.path, "lease/hard"), to: secret }));
  expect(await attempt(plugin, { op: "read", path: "/etc/hostname" })).toBe(EACCES);
});

test("the host runs with no_new_privs, a seccomp filter, in a network namespace of its own, and its layers are reported", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  await attempt(plugin, { op: "read", path: "/" });
  const status = readFileSync(`/proc/${plugin.pid}/status`, "utf8");
  expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
  expect(status).toMatch(/^Seccomp:\s+2$/m);
  expect(readlinkSync(`/proc/${plugin.pid}/ns/net`)).not.toBe(readlinkSync("/proc/self/ns/net"));
  expect(plugin.sandboxLayers).toEqual(expect.arrayContaining(["landlock", "landlock-net", "seccomp", "rlimits", "netns", "pids"]));
});

test("from a checkout, a confined host reads cxagent's transpiled code from a cache only its parent writes: the host cannot plant code there", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  const cache = join(RUNTIME_DIR, "cxagent", "transpiled");
  expect(readdirSync(cache).some((name) => name.startsWith("stamp-"))).toBe(true);
  expect(await attempt(plugin, { op: "read", path: join(cache, readdirSync(cache).find((name) => name.endsWith(".pile"))!) })).toBe(0);
  expect(await attempt(plugin, { op: "write", path: join(cache, "planted.pile") })).toBe(EACCES);
  expect(existsSync(join(cache, "planted.pile"))).toBe(false);
  // The host was pointed at it (and so never transpiles cxagent's code afresh).
  expect(readFileSync(`/proc/${plugin.pid}/environ`, "utf8").split("\0")).toContain(`BUN_RUNTIME_TRANSPILER_CACHE_PATH=${cache}`);
});

test('with net "none" a connection to a listener on 127.0.0.1 fails: the socket itself is refused', async () => {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    await using session = await openSession({ cwd: project.path });
    const plugin = await session.load(fixture("sandbox-probe"));
    expect(await attempt(plugin, { op: "connect", port: listener.port })).toBe(EPERM);
  } finally {
    listener.stop(true);
  }
});

test("with one TCP port declared, a connection to it works and to the next port fails", async () => {
  const listeners = [47813, 47814].map((port) => Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }));
  try {
    await using session = await openSession({ cwd: project.path });
    const plugin = await session.load(fixture("sandbox-port"));
    expect(await attempt(plugin, { op: "connect", port: 47813 })).toBe(0);
    expect(await attempt(plugin, { op: "connect", port: 47814 })).toBe(EACCES);
  } finally {
    for (const l of listeners) l.stop(true);
  }
});

test("memoryMiB 256 and a 1 GiB allocation: E_LIMIT naming memory", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  const error = await refusal(plugin.invoke("try", { op: "alloc", mib: 1024 }));
  expect(error.code).toBe("E_LIMIT");
  expect(error.details).toMatchObject({ limit: "memory", value: "256 MiB" });
  // A smaller allocation on the fresh host is within the limit.
  expect(await attempt(plugin, { op: "alloc", mib: 64 })).toBe(0);
});

test("a fork loop under processes 16 is stopped and named: E_LIMIT naming processes", async () => {
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(fixture("sandbox-probe"));
  const error = await refusal(plugin.invoke("try", { op: "fork" }));
  expect(error.code).toBe("E_LIMIT");
  expect(error.details).toMatchObject({ limit: "processes", value: "16" });
});

test("a confined TypeScript plugin's fs, fs.promises, Bun.file, Bun.spawn and fetch are confined too", async () => {
  using dir = tempDir();
  const listener = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("open") });
  const code = `
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
const denied = async (read: () => unknown) => { try { await read(); return "read"; } catch (e) { return (e as { code?: string }).code ?? String(e); } };
export default {
  start() {},
  stop() {},
  async invoke(_tool: string, args: { path: string; url: string }) {
    const cat = Bun.spawnSync(["cat", args.path]);
    return { success: true, output: {
      sync: await denied(() => readFileSync(args.path)),
      promises: await denied(() => readFile(args.path)),
      file: await denied(() => Bun.file(args.path).text()),
      spawn: cat.exitCode === 0 ? "read" : cat.stderr.toString().includes("Permission denied") ? "EACCES" : cat.stderr.toString(),
      fetch: await denied(() => fetch(args.url)),
    } };
  },
};`;
  try {
    const folder = writeModule(dir.path, "ts-confined", code, { sandbox: { net: "none" } });
    await approve(folder);
    await using session = await openSession({ cwd: project.path });
    const plugin = await session.load(folder);
    const { output } = await plugin.invoke("work", { path: secret, url: `http://127.0.0.1:${listener.port}/` });
    expect(output).toMatchObject({ sync: "EACCES", promises: "EACCES", file: "EACCES", spawn: "EACCES" });
    expect((output as { fetch: string }).fetch).not.toBe("read");
  } finally {
    listener.stop(true);
  }
});

test("a sandbox with a path that leaves through .. is refused when the sidecar is read, naming the path", async () => {
  using dir = tempDir();
  const folder = writeModule(dir.path, "bad-sandbox", "export function work() { return {}; }", { sandbox: { fs: { read: ["${project}/../x"] } } });
  const error = await refusal((async () => {
    await using session = await openSession({ cwd: project.path });
    await session.load(folder);
  })());
  expect(error.code).toBe("E_MANIFEST");
  expect(error.message).toContain('contains ".."');
});

test("describe must declare the sandbox its sidecar does: a plugin that describes a wider one is refused", async () => {
  using dir = tempDir();
  const code = `export default { describe: () => ({ pluginContract: 4, name: "wider", version: "1.0.0", tools: [{ name: "work" }], sandbox: { net: "any" } }), start() {}, invoke() { return { success: true }; }, stop() {} };`;
  const folder = writeModule(dir.path, "wider", code, { sandbox: { net: "none" } });
  await approve(folder);
  const error = await refusal((async () => {
    await using session = await openSession({ cwd: project.path });
    await session.load(folder);
  })());
  expect(error.code).toBe("E_MISMATCH");
  expect(error.message).toContain("sandbox");
});

// `cxagent __sandbox` hands the plan to the native launcher; with CXAGENT_SANDBOX_LAUNCHER=bun (as where none was built) it carries it out itself.
const LAUNCHERS = { native: {}, "bun:ffi": { CXAGENT_SANDBOX_LAUNCHER: "bun" } };

for (const [how, env] of Object.entries(LAUNCHERS)) {
  test(`the launcher (${how}) refuses to start the host when a step fails, naming the layer, and never runs it unconfined`, () => {
    const policy = { plugin: "p", read: [], write: [], net: "none", tmpBase: "/proc/cxagent-cannot-be-made", accepts: [] };
    const marker = join(project.path, "ran");
    const run = Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), "__sandbox", JSON.stringify(policy), "/bin/sh", "-c", `echo > ${marker}`], { env: { ...process.env, ...env } });
    expect(run.exitCode).toBe(SANDBOX_REFUSED_EXIT);
    expect(run.stderr.toString()).toStartWith(SANDBOX_REFUSED_LINE);
    expect(JSON.parse(run.stderr.toString().slice(SANDBOX_REFUSED_LINE.length))).toMatchObject({ layer: "landlock", why: expect.stringContaining("/proc/cxagent-cannot-be-made") });
    expect(existsSync(marker)).toBe(false);
  });
}

test("a launcher's refusal reaches the caller as E_SANDBOX naming the layer", () => {
  const error = crashError("p", { code: SANDBOX_REFUSED_EXIT, signal: null, refused: { layer: "seccomp", why: "seccomp(SET_MODE_FILTER) failed" } }, "during startup", new StderrTail(4), "");
  expect(error.code).toBe("E_SANDBOX");
  expect(error.message).toContain("its sandbox's seccomp layer could not be applied");
  expect(error.details).toMatchObject({ layer: "seccomp" });
});

test("a Cortex plugin declares its sandbox as [cxagent.sandbox] in manifest.toml, and its host runs confined", async () => {
  using dir = tempDir();
  const folder = join(dir.path, "pkg");
  mkdirSync(join(folder, "lib"), { recursive: true });
  copyFileSync(fixtureLibrary("cortex-basic"), join(folder, "lib/libcortex_basic.so"));
  writeFileSync(join(folder, "manifest.toml"), 'name = "cortex-basic"\nversion = "2.1.0"\n\n[sandbox]\nmeaning = "Cortex\'s own, not read"\n\n[native]\nlibrary = "lib/libcortex_basic.so"\n\n[cxagent.sandbox]\nnet = "none"\nprocesses = 4\n');
  await approve(folder);
  await using session = await openSession({ cwd: project.path });
  expect(session.inspect(folder).manifest.sandbox).toEqual({ fs: { read: [], write: [] }, net: "none", processes: 4 });
  const plugin = await session.load(folder);
  expect((await plugin.invoke("quiet", {})).success).toBe(true);
  expect(readFileSync(`/proc/${plugin.pid}/status`, "utf8")).toMatch(/^Seccomp:\s+2$/m);
  expect(plugin.sandboxLayers).toContain("landlock");
});

test("${cache} is a folder of the plugin's own under the state folder, made for it, where it may write", async () => {
  using dir = tempDir();
  const code = `import { writeFileSync } from "node:fs";
export default { start() {}, stop() {}, invoke(_t: string, a: { path: string }) { writeFileSync(a.path, "cached"); return { success: true }; } };`;
  const folder = writeModule(dir.path, "cacher", code, { sandbox: { fs: { write: ["${cache}"] } } });
  await approve(folder);
  await using session = await openSession({ cwd: project.path });
  const plugin = await session.load(folder);
  const cache = join(session.folders.stateDir, "cache", "cacher");
  expect((await plugin.invoke("work", { path: join(cache, "x") })).success).toBe(true);
  expect(readFileSync(join(cache, "x"), "utf8")).toBe("cached");
});

for (const [how, env] of Object.entries(LAUNCHERS)) {
  test(`any process started through the launcher (${how}) is confined: /bin/cat cannot read a file it was not given`, () => {
    const policy = { plugin: "p", read: [], write: [], net: "none", tmpBase: project.path, accepts: [] };
    const options = { env: { ...process.env, ...env } };
    const run = Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), "__sandbox", JSON.stringify(policy), "/bin/cat", secret], options);
    expect(run.exitCode).toBe(1);
    expect(run.stderr.toString()).toContain("Permission denied");
    const allowed = Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), "__sandbox", JSON.stringify({ ...policy, read: [secret] }), "/bin/cat", secret], options);
    expect(allowed.stdout.toString()).toBe("secret\n");
  });
}

test("the native launcher carries out the plan's words and refuses any it does not know, or a plan cut short", () => {
  const launcher = nativeLauncher(project.path)!;
  const refused = (words: string[]) => {
    const run = Bun.spawnSync([launcher, ...words]);
    expect(run.exitCode).toBe(SANDBOX_REFUSED_EXIT);
    return JSON.parse(run.stderr.toString().slice(SANDBOX_REFUSED_LINE.length)) as { layer: string; why: string };
  };
  expect(refused(["bogus", "--", "/bin/true"])).toEqual({ layer: "launcher", why: "an unknown word in the plan: bogus" });
  expect(refused(["nnp", "--"]).why).toContain("no host command");
  expect(refused(["landlock", "1", "0", "0", "1", "--", "/bin/true"]).why).toContain("never applied");
  expect(refused(["seccomp", "00", "--", "/bin/true"]).why).toContain("whole instructions");
  expect(refused(["rlimit", "7", "x", "NOFILE", "--", "/bin/true"]).why).toContain("not a number");
  expect(refused(["nnp", "--", "/nonexistent/host"])).toMatchObject({ layer: "launcher", why: expect.stringContaining("ENOENT") });
  const ran = Bun.spawnSync([launcher, "tmp", project.path, "env", "CXAGENT_X=1", "--", "/usr/bin/env"]);
  expect(ran.exitCode).toBe(0);
  expect(ran.stdout.toString()).toContain("CXAGENT_X=1\n");
  expect(ran.stdout.toString()).toContain(`TMPDIR=${project.path}/sandbox-`);
});
