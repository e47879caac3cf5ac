/**
 * The user's floor under a plugin's sandbox (issue 39 point 2): config.json may impose a sandbox
 * on a plugin that declares none, narrow one it declares (the effective sandbox is the
 * intersection, shown by describe), accept a missing layer by name, and require a sandbox of
 * every plugin. And where the layers applied are reported: describe, load --json.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/index.ts";
import { approve, cli, fixture, refusal, tempDir } from "../helpers.ts";

async function world(dir: string, config: Record<string, unknown>, approveNames: string[]) {
  const configDir = join(dir, "config");
  const stateDir = join(dir, "state");
  const cwd = join(dir, "project");
  mkdirSync(configDir);
  mkdirSync(join(cwd, "lease/only"), { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify(config));
  for (const name of approveNames) await approve(fixture(name), stateDir);
  return { cwd, open: () => Session.open({ configDir, stateDir, cwd }) };
}

const entry = (name: string, more: object = {}) => ({ [name]: { file: `${name}.so`, path: fixture(name), ...more } });

test("config.json imposes a sandbox on a plugin that declares none: its host runs confined", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("echo", { sandbox: { net: "none" } }) }, ["echo"]);
  await using session = await w.open();
  expect(session.inspect("echo").sandbox).toMatchObject({ declared: null, imposed: { net: "none" }, effective: { net: "none" } });
  const plugin = await session.load("echo");
  expect(plugin.sandboxLayers).toContain("landlock");
  expect(readFileSync(`/proc/${plugin.pid}/status`, "utf8")).toMatch(/^Seccomp:\s+2$/m);
});

test("config.json narrows a declared sandbox: the intersection is enforced, and a wider write is denied", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("sandbox-probe", { sandbox: { fs: { write: ["${project}/lease/only"] }, net: "any", memoryMiB: 128 } }) }, ["sandbox-probe"]);
  await using session = await w.open();
  expect(session.inspect("sandbox-probe").sandbox.effective).toEqual({ fs: { read: [], write: ["${project}/lease/only"] }, net: "none", processes: 16, memoryMiB: 128, openFiles: 256 });
  const plugin = await session.load("sandbox-probe");
  const attempt = async (path: string) => ((await plugin.invoke("try", { op: "write", path })).output as { errno: number }).errno;
  expect(await attempt(join(w.cwd, "lease/only/report.md"))).toBe(0);
  expect(await attempt(join(w.cwd, "lease/report.md"))).toBe(13);
});

test('"sandbox": "required" refuses a plugin with none, naming the key to add; one that declares a sandbox loads', async () => {
  using dir = tempDir();
  const w = await world(dir.path, { sandbox: "required", plugins: { ...entry("echo"), ...entry("sandbox-probe") } }, ["echo", "sandbox-probe"]);
  await using session = await w.open();
  const error = await refusal(session.load("echo"));
  expect(error.code).toBe("E_SANDBOX");
  expect(error.message).toContain('"sandbox": "required"');
  expect(error.hint).toContain('add a "sandbox" key');
  expect((await session.load("sandbox-probe")).sandboxLayers).toContain("seccomp");
});

test("sandboxAccepts names layers; anything else is a config error naming the layers there are", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("echo", { sandboxAccepts: ["pids", "landlock-tcp"] }) }, []);
  const error = await refusal(w.open());
  expect(error.code).toBe("E_CONFIG");
  expect(error.message).toContain('"landlock-tcp" is not a sandbox layer');
});

test("describe says what a plugin may touch and the layers that enforce it, and says unconfined plainly; load --json reports the layers", async () => {
  await approve(fixture("sandbox-probe"));
  await approve(fixture("echo"));
  const confined = await cli(["describe", fixture("sandbox-probe")]);
  expect(confined.stdout).toContain("may touch: reads nothing (and its own folder); writes ${project}/lease; no network; at most 16 processes, 256 MiB of memory, 256 open files");
  expect(confined.stdout).toMatch(/enforced by: no_new_privs\+.*landlock\+landlock-net\+seccomp\+rlimits\+pids/);
  expect((await cli(["describe", fixture("echo")])).stdout).toContain("may touch: unconfined");
  const loaded = await cli(["load", fixture("sandbox-probe"), "--json"]);
  expect(loaded.json().sandbox).toContain("landlock+landlock-net+seccomp");
  expect((await cli(["load", fixture("echo"), "--json"])).json().sandbox).toBe("unconfined");
});
