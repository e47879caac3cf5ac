/**
 * Trust through the CLI as a person uses it: approve (on a real pseudo-terminal, and by pinned
 * hash), describe, list, load, revoke, instructions.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, copyFixture, tempDir, tty } from "../helpers.ts";

/** Config and state folders of a test's own, and a plugin folder with copies of fixtures. */
function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const plugins = join(dir, "config", "plugins");
  mkdirSync(plugins, { recursive: true });
  return { env, plugins };
}

describe("approval lifecycle: new → approved → changed → asks again → revoked", () => {
  test("by pinned hash, without a terminal", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const echo = copyFixture("echo", plugins);

    const before = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(before.code).toBe(4);
    expect(before.json().error.code).toBe("E_NOT_APPROVED");
    const hash = before.json().error.details.hash;
    expect(before.json().error.hint).toContain(`cxagent approve echo --hash ${hash}`);

    const described = (await cli(["describe", "echo", "--json"], { env })).json();
    expect(described).toMatchObject({ hash, trust: "new", folder: echo });

    const wrong = await cli(["approve", "echo", "--hash", "0".repeat(64), "--json"], { env });
    expect(wrong.code).toBe(4);
    expect(wrong.json().error.message).toContain(`its files hash to ${hash}, not to the ${"0".repeat(64)} you gave`);

    const approved = await cli(["approve", "echo", "--hash", hash.toUpperCase(), "--json"], { env });
    expect(approved.code).toBe(0);
    expect(approved.json()).toEqual({ plugin: "echo", version: "1.0.0", hash, folder: echo, approved: true, already: false });
    const file = JSON.parse(readFileSync(join(dir.path, "state", "approvals.json"), "utf8"));
    // bound to the folder's real path, with the file list that lets "changed" say what changed
    expect(file).toEqual({
      approvals: [{
        plugin: "echo",
        hash,
        directory: echo,
        approvedAt: expect.any(String),
        files: ["echo.plugin.json", "echo.so", "manifest.h"].map((path) => ({ path, size: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })),
      }],
    });

    expect((await cli(["invoke", "echo", "echo_this"], { env })).code).toBe(0);

    writeFileSync(join(echo, "README.md"), "# echo\nnow with a README\n");
    const listed = (await cli(["list", "--json"], { env })).json();
    expect(listed.plugins.find((p: { name: string }) => p.name === "echo").trust).toBe("changed");
    const changed = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(changed.code).toBe(4);
    expect(changed.json().error.message).toContain("its files changed since it was approved");
    const newHash = changed.json().error.details.hash;
    expect(newHash).not.toBe(hash);

    expect((await cli(["approve", "echo", "--hash", newHash], { env })).code).toBe(0);
    expect((await cli(["invoke", "echo", "echo_this"], { env })).code).toBe(0);

    const revoked = await cli(["revoke", "echo", "--json"], { env });
    expect(revoked.json()).toEqual({ plugin: "echo", revoked: true, folders: [echo] });
    expect((await cli(["invoke", "echo", "echo_this"], { env })).code).toBe(4);
    expect((await cli(["revoke", "echo"], { env })).stdout).toBe(`echo was not approved at ${echo}; nothing to revoke\n`);
  });

  test("approve without a terminal and without --hash fails with exit 4 and says how", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    const r = await cli(["approve", "echo"], { env });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("approving plugin 'echo' needs a terminal to ask on");
    expect(r.stderr).toMatch(/hint: .*cxagent approve echo --hash [0-9a-f]{64}/);
  });
});

describe("the approval prompt on a terminal", () => {
  test.each([
    ["y", 0, "yes"],
    ["n", 4, "no"],
    ["\r", 4, "no"], // Enter takes the default, No
    ["\x03", 130, "^C"], // Ctrl-C interrupts, approving nothing (exit 130, as git, npm and gh)
  ])("answering %j", async (key, code, echoed) => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    const r = await tty(["approve", "echo"], [{ after: "Approve these exact files? [y/N]", send: key }], { env });
    expect(r.code).toBe(code);
    expect(r.output).toContain("Plugin echo 1.0.0 has not been approved yet.");
    if (code === 130) expect(r.output).toContain("interrupted at the prompt: nothing was allowed or approved");
    expect(existsSync(join(dir.path, "state", "approvals.json"))).toBe(code === 0);
    expect(r.output).toMatch(/hash\s+[0-9a-f]{64}/);
    expect(r.output).toContain("tools         2: echo_this, echo_that");
    expect(r.output).toContain("instructions  adds instructions for the model");
    expect(r.output).toContain(`[y/N] ${echoed}`);
    const approvals = join(dir.path, "state", "approvals.json");
    // after a yes, what was stored and where; after a no, nothing of the kind
    const folder = join(plugins, "echo");
    const stored = `[y/N] yes\napproved: echo 1.0.0 at ${folder} (hash `;
    if (code === 0) expect(r.output).toContain(stored);
    if (code === 0) expect(r.output).toContain(`…), stored in ${approvals}; './bin/cxagent revoke ${folder}' withdraws it\n`);
    else expect(r.output).not.toContain("approved:");
    const recorded = code === 0 ? JSON.parse(readFileSync(approvals, "utf8")).approvals.map((a: { plugin: string }) => a.plugin) : [];
    expect(recorded).toEqual(code === 0 ? ["echo"] : []);
  });

  test("a key that answers nothing is answered on the screen; the same keys as the permission prompt", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    const r = await tty(["approve", "echo"], [
      { after: "[y/N]", send: "o" },
      { after: "answers nothing", send: "n" },
    ], { env });
    expect(r.code).toBe(4);
    expect(r.output).toContain("Approve these exact files? [y/N] \n'o' answers nothing here: press y or n (Enter: no)\nApprove these exact files? [y/N] no");
  });

  test("an unapproved load on a terminal asks, then runs the call", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    const r = await tty(["invoke", "echo", "echo_this", "--args", '{"n": 1}'], [{ after: "[y/N]", send: "y" }], { env });
    expect(r.code).toBe(0);
    expect(r.output).toContain("echo_this: ok");
    expect((await cli(["invoke", "echo", "echo_this"], { env })).code).toBe(0); // remembered
  });

  test("the prompt names the other plugins sharing a loose load set", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    for (const name of ["echo", "house-style"]) {
      const from = copyFixture(name, join(dir.path, "staging"));
      for (const ext of [".so", ".plugin.json"]) writeFileSync(join(plugins, name + ext), readFileSync(join(from, name + ext)));
    }
    const r = await tty(["approve", "echo"], [{ after: "[y/N]", send: "n" }], { env });
    expect(r.output).toContain("shares folder with house-style");
    const listed = (await cli(["list", "--json"], { env })).json().plugins;
    expect(listed.map((p: { name: string; sharesWith: string[] }) => [p.name, p.sharesWith])).toEqual([
      ["echo", ["house-style"]],
      ["house-style", ["echo"]],
    ]);
  });

  test("a loose load set's hash covers its neighbours; a plugin in a folder of its own is isolated", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins); // nested: plugins/echo/
    const staging = copyFixture("house-style", join(dir.path, "staging"));
    for (const ext of [".so", ".plugin.json"]) writeFileSync(join(plugins, "house-style" + ext), readFileSync(join(staging, "house-style" + ext)));
    const hashes = async () =>
      Object.fromEntries((await cli(["list", "--json"], { env })).json().plugins.map((p: { name: string; hash: string }) => [p.name, p.hash]));
    const before = await hashes();
    writeFileSync(join(plugins, "echo", "NOTES.txt"), "a change inside echo's own folder");
    const after = await hashes();
    // the loose plugin's load set is the whole plugins folder, echo's folder included
    expect(after.echo).not.toBe(before.echo);
    expect(after["house-style"]).not.toBe(before["house-style"]);
    writeFileSync(join(plugins, "house-style.README.md"), "a change beside the loose plugin");
    const last = await hashes();
    expect(last.echo).toBe(after.echo);
    expect(last["house-style"]).not.toBe(after["house-style"]);
  });
});

describe("list, load, instructions", () => {
  test("list: every configured and discovered plugin, its trust, tools and collisions", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    copyFixture("echo-twin", plugins);
    copyFixture("claims-read-file", plugins);
    writeFileSync(join(dir.path, "config", "config.json"), JSON.stringify({ plugins: { "house-style": { file: "house-style.so", enabled: false }, ghost: { file: "ghost.so" } } }));
    copyFixture("house-style", plugins);
    const r = await cli(["list", "--json"], { env });
    expect(r.code).toBe(0);
    const byName = Object.fromEntries(r.json().plugins.map((p: { name: string }) => [p.name, p]));
    expect(Object.keys(byName)).toEqual(["house-style", "ghost", "claims-read-file", "echo", "echo-twin"]);
    expect(byName["house-style"]).toMatchObject({ configured: true, enabled: false, trust: "new", tools: [] });
    expect(byName.ghost).toMatchObject({ configured: true, library: null, problem: "its file 'ghost.so' is in none of the plugin folders" });
    expect(byName["claims-read-file"].collisions).toEqual([{ kind: "tool", name: "read_file", tool: "read_file", holder: "built-in" }]);
    expect(byName["echo-twin"].collisions).toEqual([{ kind: "tool", name: "echo_this", tool: "echo_this", holder: "echo" }]);
    expect(byName.echo).toMatchObject({ version: "1.0.0", library: join(plugins, "echo", "echo.so"), folder: join(plugins, "echo"), sharesWith: [], collisions: [] });
    const text = await cli(["list"], { env });
    expect(text.stdout).toContain("echo-twin 1.0.0  not approved");
    expect(text.stdout).toContain("collides tool 'echo_this' is already held by plugin 'echo'");
  });

  test("load reports each step's timing; a disabled plugin needs --once", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    writeFileSync(join(dir.path, "config", "config.json"), JSON.stringify({ plugins: { echo: { file: "echo.so", enabled: false } } }));
    const hash = (await cli(["describe", "echo", "--json"], { env })).json().hash;
    await cli(["approve", "echo", "--hash", hash], { env });
    const disabled = await cli(["load", "echo", "--json"], { env });
    expect(disabled.code).toBe(3);
    expect(disabled.json().error.code).toBe("E_DISABLED");
    const r = await cli(["load", "echo", "--once", "--json"], { env });
    expect(r.code).toBe(0);
    const report = r.json();
    // One row per step of the load pipeline, in order, and the plugin host's own phases inside spawn.
    expect(report.steps.map((s: { step: string }) => s.step)).toEqual(["resolve", "sidecar", "names", "trust", "spawn", "compare", "start", "stop"]);
    for (const s of report.steps) expect(s.ms).toBeGreaterThanOrEqual(0);
    expect(report.phases.map((p: { phase: string }) => p.phase)).toEqual(["dlopen", "cxagent_plugin_abi_version", "cxagent_plugin_describe"]);
    expect(report.totalMs).toBeGreaterThan(0);
    const human = await cli(["load", "echo", "--once"], { env });
    expect(human.stdout).toMatch(/spawn the plugin host → ready\s+\d+\.\d ms\n {6}dlopen began at\s+\d+\.\d ms/);
  });

  test("instructions: the approved, enabled plugins' text under headings naming their tools", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    copyFixture("house-style", plugins);
    for (const name of ["echo", "house-style"]) {
      const hash = (await cli(["describe", name, "--json"], { env })).json().hash;
      await cli(["approve", name, "--hash", hash], { env });
    }
    copyFixture("describe-differs", plugins); // not approved: left out
    const r = await cli(["instructions"], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("## echo_this, echo_that\n\nEcho tools for tests.\n\n## house-style (no tools)\n\nPrefer small functions.\n");
    expect(r.stderr).toBe("skipped describe-differs: not approved\n");
    const one = await cli(["instructions", "house-style", "--json"], { env });
    expect(one.json()).toEqual({ instructions: "## house-style (no tools)\n\nPrefer small functions.\n", plugins: ["house-style"], skipped: [] });
  });

  test("a corrupt approvals.json is reported by path and left untouched", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    mkdirSync(join(dir.path, "state"));
    const file = join(dir.path, "state", "approvals.json");
    writeFileSync(file, '{"approvals": [{"plugin": "echo"}]}');
    for (const args of [["invoke", "echo", "echo_this"], ["approve", "echo", "--hash", "a".repeat(64)], ["list"]]) {
      const r = await cli([...args, "--json"], { env });
      expect(r.code).toBe(3);
      expect(r.json().error.code).toBe("E_STATE");
      expect(r.json().error.message).toContain(`the approvals file ${file} is corrupt`);
    }
    expect(readFileSync(file, "utf8")).toBe('{"approvals": [{"plugin": "echo"}]}');
  });

  test("a corrupt entry of another plugin: this one loads and runs; revoking, which rewrites the file, refuses it", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    copyFixture("echo", plugins);
    const hash = (await cli(["describe", "echo", "--json"], { env })).json().hash;
    expect((await cli(["approve", "echo", "--hash", hash], { env })).code).toBe(0);
    const file = join(dir.path, "state", "approvals.json");
    const approvals = JSON.parse(readFileSync(file, "utf8")).approvals;
    const text = JSON.stringify({ approvals: [...approvals, { plugin: "other", hash: "not a hash" }] });
    writeFileSync(file, text);
    const invoked = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(invoked.code).toBe(0);
    expect(invoked.json().ok).toBe(true);
    // ...while this plugin's own entry is still held to the whole schema (the test above)
    const revoked = await cli(["revoke", "echo", "--json"], { env });
    expect(revoked.code).toBe(3);
    expect(revoked.json().error.message).toContain(`the approvals file ${file} is corrupt`);
    expect(readFileSync(file, "utf8")).toBe(text);
  });
});

test("a hint names the --config-dir and --state-dir that found the plugin, and the command it names works as shown", async () => {
  using dir = tempDir();
  const config = join(dir.path, "elsewhere-config");
  const state = join(dir.path, "elsewhere-state");
  mkdirSync(join(config, "plugins"), { recursive: true });
  copyFixture("echo", join(config, "plugins"));
  const flags = ["--config-dir", config, "--state-dir", state];
  const r = await cli(["invoke", "echo", "echo_this", "--args", "{}", ...flags, "--json"]);
  expect(r.code).toBe(4);
  const hint: string = r.json().error.hint;
  const pinned = /'(\.\/bin\/cxagent approve echo --hash [0-9a-f]{64} [^']*)'/.exec(hint)?.[1];
  expect(pinned).toBe(`./bin/cxagent approve echo --hash ${r.json().error.next.hash} --config-dir ${config} --state-dir ${state}`);
  const approved = Bun.spawnSync(["bash", "-c", pinned!], { cwd: join(import.meta.dir, "../..") });
  expect({ code: approved.exitCode, stderr: approved.stderr.toString() }).toEqual({ code: 0, stderr: "" });
  expect((await cli(["invoke", "echo", "echo_this", "--args", "{}", ...flags])).code).toBe(0);
});

