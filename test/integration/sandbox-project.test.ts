/**
 * A project's `.cxagent/config.json` may narrow a plugin's sandbox, never widen it (issue 39
 * point 2): its `plugins.<name>.sandbox` is intersected with what the plugin declares and the
 * user's config.json imposes; an entry that would widen anything refuses the load, naming each
 * such entry by its JSON path. describe shows the effective sandbox and where each narrowing came
 * from. Real config files, a real sandboxed host.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/index.ts";
import { approve, cli, fixture, refusal, tempDir } from "../helpers.ts";

async function world(dir: string, user: Record<string, unknown>, project: Record<string, unknown>) {
  const configDir = join(dir, "config");
  const stateDir = join(dir, "state");
  const cwd = join(dir, "project");
  mkdirSync(configDir);
  mkdirSync(join(cwd, "lease/only"), { recursive: true });
  mkdirSync(join(cwd, ".cxagent"));
  writeFileSync(join(configDir, "config.json"), JSON.stringify(user));
  writeFileSync(join(cwd, ".cxagent/config.json"), JSON.stringify(project));
  await approve(fixture("sandbox-probe"), stateDir);
  await approve(fixture("echo"), stateDir);
  return { cwd, configDir, stateDir, projectFile: join(cwd, ".cxagent/config.json"), open: () => Session.open({ configDir, stateDir, cwd }) };
}

const entry = (name: string, more: object = {}) => ({ [name]: { file: `${name}.so`, path: fixture(name), ...more } });
const probe = (sandbox: object) => ({ plugins: { "sandbox-probe": { sandbox } } });

test("a project narrows a declared sandbox: the intersection is enforced, a write the plugin declared but the project did not is denied", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("sandbox-probe") }, probe({ fs: { write: ["${project}/lease/only"] }, memoryMiB: 128 }));
  await using session = await w.open();
  const facts = session.inspect("sandbox-probe").sandbox;
  expect(facts.effective).toEqual({ fs: { read: [], write: ["${project}/lease/only"] }, net: "none", processes: 16, memoryMiB: 128, openFiles: 256 });
  expect(facts.narrowedBy).toEqual([
    { key: "fs.write", by: "project", file: w.projectFile },
    { key: "memoryMiB", by: "project", file: w.projectFile },
  ]);
  const plugin = await session.load("sandbox-probe");
  const attempt = async (path: string) => ((await plugin.invoke("try", { op: "write", path })).output as { errno: number }).errno;
  expect(await attempt(join(w.cwd, "lease/only/report.md"))).toBe(0);
  expect(await attempt(join(w.cwd, "lease/report.md"))).toBe(13);
});

test("a project imposes a sandbox on a plugin that declares none: its host runs confined", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("echo") }, { plugins: { echo: { sandbox: { net: "none" } } } });
  await using session = await w.open();
  expect(session.inspect("echo").sandbox.effective).toEqual({ fs: { read: [], write: [] }, net: "none" });
  const plugin = await session.load("echo");
  expect(plugin.sandboxLayers).toContain("landlock");
});

test("a project entry that would widen is refused by its JSON path: a path outside, a wider network, a higher limit", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("sandbox-probe") }, probe({ fs: { read: ["${project}/lease"], write: ["${project}/lease", "${project}"] }, net: "any", memoryMiB: 1024, processes: 8 }));
  await using session = await w.open();
  const error = await refusal(session.load("sandbox-probe"));
  expect(error.code).toBe("E_CONFIG");
  expect(error.message).toContain(w.projectFile);
  const problems = (error.details as { problems: { path: string; message: string }[] }).problems;
  expect(problems.map((p) => p.path)).toEqual(["plugins.sandbox-probe.sandbox.fs.write[1]", "plugins.sandbox-probe.sandbox.net", "plugins.sandbox-probe.sandbox.memoryMiB"]);
  expect(problems[0]!.message).toContain('"${project}" lies outside what may be written ("${project}/lease")');
  expect(problems[2]!.message).toContain("1024 is higher than the 256 allowed");
  expect(error.hint).toContain("describe shows it");
});

test("a project may not widen past what the user's config.json narrowed, even within what the plugin declares", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("sandbox-probe", { sandbox: { fs: { write: ["${project}/lease/only"] }, memoryMiB: 128 } }) }, probe({ fs: { write: ["${project}/lease"] }, memoryMiB: 200 }));
  await using session = await w.open();
  const error = await refusal(session.load("sandbox-probe"));
  const problems = (error.details as { problems: { path: string }[] }).problems;
  expect(problems.map((p) => p.path)).toEqual(["plugins.sandbox-probe.sandbox.fs.write[0]", "plugins.sandbox-probe.sandbox.memoryMiB"]);
});

test("describe shows the effective sandbox and where each narrowing came from: the user's config.json, then the project's", async () => {
  using dir = tempDir();
  const w = await world(dir.path, { plugins: entry("sandbox-probe", { sandbox: { fs: { write: ["${project}/lease"] }, memoryMiB: 128 } }) }, probe({ fs: { write: ["${project}/lease/only"] } }));
  const run = await cli(["describe", "sandbox-probe", "--json"], { cwd: w.cwd, env: { CXAGENT_CONFIG_DIR: w.configDir, CXAGENT_STATE_DIR: w.stateDir } });
  const report = run.json().sandbox;
  expect(report.effective).toEqual({ fs: { read: [], write: ["${project}/lease/only"] }, net: "none", processes: 16, memoryMiB: 128, openFiles: 256 });
  expect(report.narrowedBy).toEqual([
    { key: "memoryMiB", by: "config", file: join(w.configDir, "config.json") },
    { key: "fs.write", by: "project", file: w.projectFile },
  ]);
  const text = await cli(["describe", "sandbox-probe"], { cwd: w.cwd, env: { CXAGENT_CONFIG_DIR: w.configDir, CXAGENT_STATE_DIR: w.stateDir } });
  expect(text.stdout).toContain("may touch: reads nothing (and its own folder); writes ${project}/lease/only; no network; at most 16 processes, 128 MiB of memory, 256 open files");
  expect(text.stdout).toContain(`narrowed: memoryMiB by ${join(w.configDir, "config.json")}`);
  expect(text.stdout).toContain(`narrowed: fs.write by ${w.projectFile}`);
});
