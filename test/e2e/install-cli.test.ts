/**
 * Plugins managed like packages: `install` (a folder or a tarball, approved by --hash or at the
 * prompt, a name collision refused, nothing left behind when not approved), `uninstall` (the
 * folder, its approvals and its grants), `list` (installed and approved-by-path plugins alike),
 * `approvals`, and `grants --add`. Each test has its own config and state folders.
 */
import { expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CALCULATOR, cli, fixture, tempDir, tty } from "../helpers.ts";

function world(root: string) {
  const config = join(root, "config");
  const state = join(root, "state");
  const project = join(root, "project");
  mkdirSync(project, { recursive: true });
  const env = { CXAGENT_CONFIG_DIR: config, CXAGENT_STATE_DIR: state };
  const run = (args: string[]) => cli([...args, "--cwd", project], { env });
  const hashOf = async (ref: string) => (await run(["describe", ref, "--json"])).json().hash as string;
  return { config, state, project, env, run, hashOf, installed: (name: string) => join(config, "plugins", name) };
}

const approvalsIn = (state: string) => (existsSync(join(state, "approvals.json")) ? JSON.parse(readFileSync(join(state, "approvals.json"), "utf8")).approvals : []);
const grantsIn = (state: string) => (existsSync(join(state, "permissions.json")) ? JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")).grants : []);

test("install <folder> --hash copies it into the plugins folder and approves the copy; it loads by name", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  const hash = await w.hashOf(CALCULATOR);
  const r = await w.run(["install", CALCULATOR, "--hash", hash, "--json"]);
  expect(r.code).toBe(0);
  expect(r.json()).toMatchObject({ installed: true, plugin: "calculator", hash, folder: w.installed("calculator"), already: false });
  expect(readdirSync(w.installed("calculator")).sort()).toEqual(readdirSync(CALCULATOR).sort());
  expect(approvalsIn(w.state).map((a: { directory: string }) => a.directory)).toEqual([w.installed("calculator")]);
  // nothing of the staging folder stays
  expect(readdirSync(join(w.config, "plugins"))).toEqual(["calculator"]);
  const called = await w.run(["invoke", "calculator", "calc_multiply", "--args", '{"a": 6, "b": 7}']);
  expect({ code: called.code, out: called.stdout }).toEqual({ code: 0, out: "6 * 7 = 42\n" });
});

test("install refuses a name that is already installed or found, and copies nothing", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  const hash = await w.hashOf(CALCULATOR);
  expect((await w.run(["install", CALCULATOR, "--hash", hash])).code).toBe(0);
  const again = await w.run(["install", CALCULATOR, "--hash", hash, "--json"]);
  expect(again.code).toBe(3);
  expect(again.json().error.message).toBe(`a plugin named 'calculator' is already installed at ${w.installed("calculator")}: installing another would make one of them unreachable by name`);
  expect(again.json().error.hint).toContain("uninstall calculator");
  // one found in the project's plugin folder collides too
  using other = tempDir();
  const w2 = world(other.path);
  mkdirSync(join(w2.project, ".cxagent/plugins"), { recursive: true });
  cpSync(CALCULATOR, join(w2.project, ".cxagent/plugins/calculator"), { recursive: true });
  const found = await w2.run(["install", CALCULATOR, "--hash", hash]);
  expect(found.code).toBe(3);
  expect(found.stderr).toContain(`a plugin named 'calculator' is already found at ${join(w2.project, ".cxagent/plugins/calculator")}`);
  expect(existsSync(w2.installed("calculator"))).toBe(false);
  expect(readdirSync(join(w2.config, "plugins"))).toEqual([]);
});

test("install without a terminal and without --hash installs nothing and names the --hash command; a wrong hash installs nothing", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  const r = await w.run(["install", CALCULATOR, "--json"]);
  expect(r.code).toBe(4);
  const hash = await w.hashOf(CALCULATOR);
  expect(r.json().error.message).toBe("installing plugin 'calculator' needs its files approved, and there is no terminal to ask on; nothing was installed");
  expect(r.json().error.hint).toContain(`install ${CALCULATOR} --hash ${hash} --cwd ${w.project}'`);
  const wrong = await w.run(["install", CALCULATOR, "--hash", "0".repeat(64)]);
  expect(wrong.code).toBe(4);
  expect(wrong.stderr).toContain("nothing was installed");
  expect(readdirSync(join(w.config, "plugins"))).toEqual([]);
  expect(approvalsIn(w.state)).toEqual([]);
});

test("install on a terminal shows the trust prompt for the copied files; no leaves nothing, yes installs", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  const no = await tty(["install", CALCULATOR, "--cwd", w.project], [{ after: "[y/N]", send: "n" }], { env: w.env });
  expect(no.code).toBe(4);
  expect(no.output).toContain("Plugin calculator 1.0.0 has not been approved yet.");
  expect(existsSync(w.installed("calculator"))).toBe(false);
  const yes = await tty(["install", CALCULATOR, "--cwd", w.project], [{ after: "[y/N]", send: "y" }], { env: w.env });
  expect(yes.code).toBe(0);
  expect(yes.output).toContain(`installed calculator 1.0.0 at ${w.installed("calculator")}, approved (hash `);
});

test("install <tarball>: npm pack's layout (one top folder) and a flat tar; something else is refused", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  const packed = join(dir.path, "packed");
  mkdirSync(join(packed, "package"), { recursive: true });
  cpSync(join(import.meta.dir, "../../examples/calculator-ts"), join(packed, "package"), { recursive: true });
  const tgz = join(dir.path, "calculator-ts-1.0.0.tgz");
  expect(Bun.spawnSync(["tar", "czf", tgz, "-C", packed, "package"]).exitCode).toBe(0);
  const hash = await w.hashOf(join(import.meta.dir, "../../examples/calculator-ts"));
  const r = await w.run(["install", tgz, "--hash", hash, "--json"]);
  expect(r.code).toBe(0);
  expect(r.json()).toMatchObject({ plugin: "calculator-ts", folder: w.installed("calculator-ts"), hash });
  const flat = join(dir.path, "echo.tar");
  expect(Bun.spawnSync(["tar", "cf", flat, "-C", fixture("echo"), "."]).exitCode).toBe(0);
  expect((await w.run(["install", flat, "--hash", await w.hashOf(fixture("echo"))])).code).toBe(0);
  expect(existsSync(join(w.installed("echo"), "echo.so"))).toBe(true);
  const notTar = await w.run(["install", join(CALCULATOR, "calculator.c")]);
  expect(notTar.code).toBe(3);
  expect(notTar.stderr).toContain("is neither a folder nor a tarball");
  expect((await w.run(["install", join(dir.path, "missing")])).code).toBe(3);
});

test("uninstall removes the folder, its approvals and its grants in every project; a plugin install did not put there is refused", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  expect((await w.run(["install", CALCULATOR, "--hash", await w.hashOf(CALCULATOR)])).code).toBe(0);
  expect((await w.run(["grants", "--add", "plugin calculator tool calc_add"])).code).toBe(0);
  expect(grantsIn(w.state)).toHaveLength(1);
  // the same plugin approved at its own folder keeps that approval
  expect((await w.run(["approve", CALCULATOR, "--hash", await w.hashOf(CALCULATOR)])).code).toBe(0);
  const r = await w.run(["uninstall", "calculator", "--json"]);
  expect(r.code).toBe(0);
  expect(r.json()).toEqual({ plugin: "calculator", folder: w.installed("calculator"), uninstalled: true, approvalsRemoved: 1, grantsRemoved: 1 });
  expect(existsSync(w.installed("calculator"))).toBe(false);
  expect(approvalsIn(w.state).map((a: { directory: string }) => a.directory)).toEqual([CALCULATOR]);
  expect(grantsIn(w.state)).toEqual([]);
  const again = await w.run(["uninstall", "calculator"]);
  expect(again.code).toBe(3);
  expect(again.stderr).toContain(`no plugin named 'calculator' is installed in ${join(w.config, "plugins")}`);
  mkdirSync(join(w.project, ".cxagent/plugins"), { recursive: true });
  cpSync(fixture("echo"), join(w.project, ".cxagent/plugins/echo"), { recursive: true });
  const foreign = await w.run(["uninstall", "echo"]);
  expect(foreign.code).toBe(3);
  expect(foreign.stderr).toContain(`a plugin of that name is at ${join(w.project, ".cxagent/plugins/echo")}, which install did not put there`);
  expect(existsSync(join(w.project, ".cxagent/plugins/echo"))).toBe(true);
});

test("list shows installed, discovered and approved-by-path plugins alike; approvals lists every approval", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  expect((await w.run(["install", fixture("echo"), "--hash", await w.hashOf(fixture("echo"))])).code).toBe(0);
  expect((await w.run(["approve", CALCULATOR, "--hash", await w.hashOf(CALCULATOR)])).code).toBe(0);
  const listed = await w.run(["list", "--json"]);
  expect(listed.code).toBe(0);
  const plugins = listed.json().plugins.map((p: { name: string; source: string; trust: string; folder: string }) => [p.name, p.source, p.trust, p.folder]);
  expect(plugins).toEqual([
    ["echo", "installed", "approved", w.installed("echo")],
    ["calculator", "approved by path", "approved", CALCULATOR],
  ]);
  const text = await w.run(["list"]);
  expect(text.stdout).toContain("calculator 1.0.0  approved\n  found    by its approval (not in a plugins folder): load it by its path");
  const approvals = await w.run(["approvals", "--json"]);
  expect(approvals.code).toBe(0);
  expect(approvals.json().approvals.map((a: { plugin: string; folder: string; folderExists: boolean }) => [a.plugin, a.folder, a.folderExists])).toEqual([
    ["echo", w.installed("echo"), true],
    ["calculator", CALCULATOR, true],
  ]);
  expect((await w.run(["approvals"])).stdout).toMatch(/^echo {2}.*\n {2}hash [0-9a-f]{64}, 3 files, since /);
});

test("grants --add stores what Always stores, and a later call without a terminal is allowed by it; a tool that cannot be granted is refused", async () => {
  using dir = tempDir();
  const w = world(dir.path);
  expect((await w.run(["approve", CALCULATOR, "--hash", await w.hashOf(CALCULATOR)])).code).toBe(0);
  expect((await w.run(["invoke", CALCULATOR, "calc_add", "--args", '{"a": 2, "b": 3}'])).code).toBe(4);
  const added = await w.run(["grants", "--add", `plugin calculator tool calc_add`, "--json"]);
  expect(added.code).toBe(0);
  expect(added.json()).toMatchObject({ added: true, rule: "plugin calculator tool calc_add", scope: w.project, folder: CALCULATOR });
  // by name: the approved-by-path plugin is found by the path given instead
  const called = await w.run(["invoke", CALCULATOR, "calc_add", "--args", '{"a": 2, "b": 3}']);
  expect({ code: called.code, out: called.stdout }).toEqual({ code: 0, out: "2 + 3 = 5\n" });
  const typo = await w.run(["grants", "--add", "plugin calculator tool calc_ad"]);
  expect(typo.code).toBe(3);
  expect(typo.stderr).toContain("plugin 'calculator' declares no tool 'calc_ad'");
  const never = await w.run(["grants", "--add", "plugin calculator tool calc_multiply"]);
  expect(never.code).toBe(3);
  expect(never.stderr).toContain("calc_multiply never asks for permission");
  expect((await w.run(["grants", "--add", "calculator/calc_add"])).code).toBe(2);
});

test("the new commands take --help and --json", async () => {
  for (const command of ["install", "uninstall", "approvals", "grants"]) {
    const help = await cli([command, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(command);
  }
  const usage = await cli(["install", "--json"]);
  expect(usage.code).toBe(2);
  expect(usage.json().error.code).toBe("E_USAGE");
});
