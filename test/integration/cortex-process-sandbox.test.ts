/**
 * A Cortex process plugin's `[cxagent.sandbox]` (issue 43): each call's process starts through the
 * sandbox launcher (sandbox/command.ts sandboxedCommand; plugin-host/process-sandbox.ts), so a
 * script tool attempting what its declaration does not allow — reading a file outside, writing
 * outside, connecting with net "none" — is refused by the kernel, while its own folder stays
 * readable, its command executable, its ${tmp} (one per call) writable, and a working_dir outside
 * its folder readable where allow_host_paths lets it name one. The same tool without the
 * declaration does all three: the test sees the sandbox, not a tool that cannot do them anyway.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Socket } from "bun";
import { join } from "node:path";
import { describeTrustRequest } from "../../src/cli/_trust-prompt.ts";
import { probeKernel } from "../../src/sandbox/plan.ts";
import { trustRequestOf } from "../../src/session/inspect.ts";
import { cli, openSession, refusal, ROOT, tempDir } from "../helpers.ts";

const PROBE = `#!/bin/bash
# Tries what its input names; answers one JSON string: what it could do.
read -r line
get() { printf '%s' "$line" | sed -n "s/.*\\"$1\\":\\"\\([^\\"]*\\)\\".*/\\1/p"; }
said=""
try() { if ( eval "$2" ) >/dev/null 2>&1; then said="$said $1:ok"; else said="$said $1:denied"; fi; }
try read-outside 'cat "$(get secret)"'
try write-outside 'echo x > "$(get out)"'
try connect 'exec 3<>/dev/tcp/127.0.0.1/$(get port)'
try read-own 'cat "$(dirname "$0")/manifest.toml"'
try write-tmp 'echo x > "$TMPDIR/probe" && echo "$TMPDIR" > "$TMPDIR/probe"'
try read-cwd 'ls .'
printf '"%s tmp:%s"\\n' "$said" "$TMPDIR"
`;

const outside = tempDir("cxagent-outside-");
const secret = join(outside.path, "secret.txt");
const workdir = join(outside.path, "work");
let server: import("bun").TCPSocketListener<undefined>;
beforeAll(() => {
  writeFileSync(secret, "not yours\n");
  mkdirSync(workdir);
  server = Bun.listen<undefined>({ hostname: "127.0.0.1", port: 0, socket: { data(_s: Socket<undefined>) {}, open(s: Socket<undefined>) { s.end(); } } });
});
afterAll(() => {
  server.stop(true);
  outside[Symbol.dispose]();
});

/** A process plugin of one tool, the probe; `sandbox`: its [cxagent.sandbox] table, or none. */
function plugin(dir: string, sandbox: string | null, extra = ""): string {
  const folder = join(dir, "probe-plugin");
  mkdirSync(folder);
  writeFileSync(join(folder, "probe.sh"), PROBE);
  chmodSync(join(folder, "probe.sh"), 0o755);
  writeFileSync(join(folder, "manifest.toml"), `name = "probe-plugin"\nversion = "1.0.0"\n\n[native]\nisolation = "process"\n${extra}\n[[native.tools]]\nname = "probe"\ndescription = "Tries what its input names."\ncommand = "probe.sh"\ntimeout_secs = 20\nmax_cpu_secs = 10\n${sandbox === null ? "" : `\n[cxagent.sandbox]\n${sandbox}\n`}`);
  return folder;
}

async function probe(folder: string, out: string) {
  await using session = await openSession();
  const loaded = await session.load(folder);
  const first = await loaded.invoke("probe", { secret, out, port: String(server.port) });
  const second = await loaded.invoke("probe", { secret, out, port: String(server.port) });
  expect(first.success).toBe(true);
  const said = (r: typeof first) => Object.fromEntries(String(r.output.content).trim().split(" ").map((w) => w.split(":") as [string, string]));
  return { first: said(first), second: said(second), layers: loaded.sandboxLayers };
}

test('each call\'s process is confined: reading and writing outside and connecting with net "none" are refused; its own folder, its command and its ${tmp} work', async () => {
  using dir = tempDir();
  const out = join(dir.path, "written-outside");
  const r = await probe(plugin(dir.path, 'net = "none"'), out);
  expect(r.first).toMatchObject({ "read-outside": "denied", "write-outside": "denied", connect: "denied", "read-own": "ok", "write-tmp": "ok", "read-cwd": "ok" });
  expect(existsSync(out)).toBe(false);
  // ${tmp} is per call (one per process, removed once it ended)
  expect(r.first.tmp).not.toBe(r.second.tmp);
  expect(existsSync(r.first.tmp!)).toBe(false);
  expect(r.layers).toEqual(expect.arrayContaining(["landlock", "seccomp"]));
}, 60_000);

test("the same tool without [cxagent.sandbox] reads, writes and connects: what the sandbox refused, it refused", async () => {
  using dir = tempDir();
  const out = join(dir.path, "written-outside");
  const r = await probe(plugin(dir.path, null), out);
  expect(r.first).toMatchObject({ "read-outside": "ok", "write-outside": "ok", connect: "ok", "read-own": "ok" });
  expect(existsSync(out)).toBe(true);
  expect(r.layers).toBeNull();
}, 60_000);

test("declared reads and writes are granted; with allow_host_paths, a working_dir outside the folder is readable", async () => {
  using dir = tempDir();
  const out = join(outside.path, "allowed-out");
  const folder = plugin(dir.path, `net = "any"\nfs = { read = [${JSON.stringify(secret)}], write = [${JSON.stringify(outside.path)}] }`, "allow_host_paths = true\n");
  const manifest = join(folder, "manifest.toml");
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace('timeout_secs = 20', `timeout_secs = 20\nworking_dir = ${JSON.stringify(workdir)}`));
  const r = await probe(folder, out);
  expect(r.first).toMatchObject({ "read-outside": "ok", "write-outside": "ok", connect: "ok", "read-cwd": "ok" });
}, 60_000);

test("with allow_host_paths, a working_dir outside the folder is readable though no declared path covers it; what lies beside it is not", async () => {
  using dir = tempDir();
  const folder = plugin(dir.path, 'net = "none"', "allow_host_paths = true\n");
  const manifest = join(folder, "manifest.toml");
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace("timeout_secs = 20", `timeout_secs = 20\nworking_dir = ${JSON.stringify(workdir)}`));
  const r = await probe(folder, join(dir.path, "written-outside"));
  expect(r.first).toMatchObject({ "read-cwd": "ok", "read-outside": "denied", "write-outside": "denied" });
}, 60_000);

test("with allow_host_paths, a command outside the folder runs under the sandbox (that file executable), and what lies beside it stays out of reach", async () => {
  using dir = tempDir();
  const tools = join(outside.path, "tools");
  mkdirSync(tools, { recursive: true });
  writeFileSync(join(tools, "probe.sh"), PROBE);
  chmodSync(join(tools, "probe.sh"), 0o755);
  const beside = join(tools, "beside.txt");
  writeFileSync(beside, "not granted\n");
  const folder = plugin(dir.path, 'net = "none"', "allow_host_paths = true\n");
  const manifest = join(folder, "manifest.toml");
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace('command = "probe.sh"', `command = ${JSON.stringify(join(tools, "probe.sh"))}`));
  await using session = await openSession();
  const loaded = await session.load(folder);
  const r = await loaded.invoke("probe", { secret: beside, out: join(tools, "written"), port: String(server.port) });
  expect(r.success).toBe(true);
  expect(String(r.output.content)).toContain("read-outside:denied write-outside:denied connect:denied");
  expect(existsSync(join(tools, "written"))).toBe(false);
}, 60_000);

test("describe and the trust prompt show a process plugin's sandbox as any other's", async () => {
  using dir = tempDir();
  await using session = await openSession();
  const folder = plugin(dir.path, 'net = "none"');
  const inspected = session.inspect(folder);
  expect(inspected.manifest.sandbox).toEqual({ fs: { read: [], write: [] }, net: "none" });
  expect(inspected.sandbox.effective).toEqual({ fs: { read: [], write: [] }, net: "none" });
  const prompt = describeTrustRequest(trustRequestOf(inspected));
  expect(prompt).toContain("  may touch     reads nothing (and its own folder); writes nothing; no network");
  expect(prompt).toContain("confined by the kernel to what it may touch");
  const described = await cli(["describe", folder]);
  expect(described.stdout).toContain("may touch: reads nothing (and its own folder); writes nothing; no network");
  expect(described.stdout).toMatch(/enforced by: no_new_privs\+.*landlock\+.*seccomp\+rlimits/);
});

test("a layer this kernel lacks refuses the load with E_SANDBOX naming it, before any command runs (no pids cgroup: /sys/fs/cgroup hidden in a mount namespace)", async () => {
  using dir = tempDir();
  const marks = join(dir.path, "marks");
  mkdirSync(marks);
  const folder = plugin(dir.path, `net = "none"\nprocesses = 4\nfs = { write = [${JSON.stringify(marks)}] }`);
  const marker = join(marks, "ran");
  writeFileSync(join(folder, "probe.sh"), `#!/bin/sh\ntouch ${marker}\necho '"ran"'\n`);
  const hash = (await cli(["describe", folder, "--json"])).json().hash as string;
  expect((await cli(["approve", folder, "--hash", hash])).code).toBe(0);
  const hidden = ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"', "sh", process.execPath, join(ROOT, "src/main.ts")];
  const r = await cli(["invoke", folder, "probe", "--args", "{}"], { bin: hidden });
  expect(r.stderr).toContain("its sandbox needs the pids layer");
  expect(r.code).not.toBe(0);
  expect(existsSync(marker)).toBe(false);
  // the same, where the kernel offers it, runs
  if (probeKernel().pidsBase !== null) {
    expect((await cli(["invoke", folder, "probe", "--args", "{}"])).code).toBe(0);
    expect(existsSync(marker)).toBe(true);
  }
}, 60_000);

test("a tool whose args hold __host (which the launcher reads as a host's options, granting the folders they name) is refused, not run", async () => {
  using dir = tempDir();
  const folder = plugin(dir.path, 'net = "none"');
  const manifest = join(folder, "manifest.toml");
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace('timeout_secs = 20', `timeout_secs = 20\nargs = ["__host", "x", "--snapshot", ${JSON.stringify(outside.path)}]`));
  await using session = await openSession();
  const loaded = await session.load(folder);
  const error = await refusal(loaded.invoke("probe", { secret, out: join(outside.path, "escaped"), port: "1" }));
  expect(error.code).toBe("E_PLUGIN_FAILED");
  expect(error.message).toContain("was not run: its command line holds the word __host");
  expect(existsSync(join(outside.path, "escaped"))).toBe(false);
}, 60_000);
