/**
 * An approval is for a plugin at a folder (SPEC §6.3): same-named plugins in two folders are two
 * plugins, a project's plugin never takes the user's configured settings, and "changed" says
 * which files changed. Through the CLI, with real folders.
 */
import { describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, copyFixture, fixture, tempDir, tty } from "../helpers.ts";

function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const plugins = join(dir, "config", "plugins");
  const project = join(dir, "project");
  mkdirSync(plugins, { recursive: true });
  mkdirSync(project, { recursive: true });
  return { env, plugins, project, config: (value: unknown) => writeFileSync(join(dir, "config", "config.json"), JSON.stringify(value)) };
}

async function pin(ref: string, env: Record<string, string>, cwd?: string) {
  const args = cwd ? ["--cwd", cwd] : [];
  const hash = (await cli(["describe", ref, "--json", ...args], { env })).json().hash;
  const r = await cli(["approve", ref, "--hash", hash, "--json", ...args], { env });
  expect(r.code).toBe(0);
  return hash as string;
}

const approvals = (dir: string) => JSON.parse(readFileSync(join(dir, "state", "approvals.json"), "utf8")).approvals as { plugin: string; directory: string }[];

describe("same-named plugins in two folders are two plugins", () => {
  test("both are approved and both load; approving one never removes the other's approval", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const first = copyFixture("echo", plugins);
    const second = copyFixture("echo", join(dir.path, "elsewhere"));
    await pin(first, env);
    // the second is refused, and told apart from the first by its folder
    const refused = await cli(["invoke", second, "echo_this", "--json"], { env });
    expect(refused.code).toBe(4);
    expect(refused.json().error.message).toContain(`another plugin named echo is approved from ${first}; this one is at ${second}`);
    const prompt = await tty(["approve", second], [{ after: "[y/N]", send: "y" }], { env });
    expect(prompt.output).toContain(`elsewhere     another plugin named echo is approved from ${first}; this one is at ${second}`);
    expect(approvals(dir.path).map((a) => [a.plugin, a.directory])).toEqual([["echo", first], ["echo", second]]);
    for (const ref of [first, second]) expect((await cli(["invoke", ref, "echo_this"], { env })).code).toBe(0);
    // revoking one leaves the other
    expect((await cli(["revoke", second, "--json"], { env })).json()).toEqual({ plugin: "echo", revoked: true, folders: [second] });
    expect((await cli(["invoke", first, "echo_this"], { env })).code).toBe(0);
  });

  test("a project's plugin shadowing an approved one is named as another folder, not as changed", async () => {
    using dir = tempDir();
    const { env, plugins, project } = world(dir.path);
    const user = copyFixture("echo", plugins);
    await pin("echo", env);
    const shadow = copyFixture("echo", join(project, ".cxagent", "plugins"));
    const r = await cli(["invoke", "echo", "echo_this", "--cwd", project, "--json"], { env });
    expect(r.code).toBe(4);
    expect(r.json().error.details).toMatchObject({ state: "new", folder: shadow, approvedElsewhere: [user] });
    const listed = (await cli(["list", "--cwd", project, "--json"], { env })).json().plugins;
    expect(listed[0]).toMatchObject({ name: "echo", folder: shadow, trust: "new", approvedElsewhere: [user], shadows: [user] });
  });
});

describe("settings go only where they were meant", () => {
  const settings = { token: "secret-token-123", url: "https://example.test" };

  test("a project's plugin of a configured name gets neither the entry's settings nor a load", async () => {
    using dir = tempDir();
    const { env, plugins, project, config } = world(dir.path);
    const user = copyFixture("echo", plugins);
    const shadow = copyFixture("echo", join(project, ".cxagent", "plugins"));
    config({ plugins: { echo: { file: "echo.so", settings } } });
    // the configured name means the user's own plugin, even though the project's comes first in the search
    await pin("echo", env, project);
    const ran = await cli(["invoke", "echo", "echo_this", "--cwd", project, "--json"], { env });
    expect(ran.code).toBe(0);
    expect(ran.json().result.output.context.settings).toEqual(settings);
    expect(approvals(dir.path).map((a) => a.directory)).toEqual([user]);
    // the project's, named by its path, is refused as a shadow, naming both folders
    for (const command of [["load", shadow], ["approve", shadow, "--hash", "0".repeat(64)], ["invoke", shadow, "echo_this"]]) {
      const r = await cli([...command, "--cwd", project, "--json"], { env });
      expect(r.code).toBe(5);
      expect(r.json().error.code).toBe("E_SHADOWED");
      expect(r.json().error.message).toContain(`plugin 'echo' at ${shadow} was refused: config.json has an entry 'echo' and its plugin is at ${user}`);
    }
    const described = (await cli(["describe", shadow, "--cwd", project, "--json"], { env })).json();
    expect(described).toMatchObject({ settings: null, shadowing: { entry: "echo", folder: user, pinned: false }, refused: { code: "E_SHADOWED" } });
    const listed = (await cli(["list", "--cwd", project, "--json"], { env })).json().plugins;
    expect(listed.map((p: { folder: string; shadowing: unknown }) => [p.folder, p.shadowing])).toEqual([
      [user, null],
      [shadow, { entry: "echo", folder: user, pinned: false }],
    ]);
  });

  test("a pinned path: the trust prompt names the entry whose settings it receives, by key names only", async () => {
    using dir = tempDir();
    const { env, project, config } = world(dir.path);
    const pinned = copyFixture("echo", join(dir.path, "mine"));
    const other = copyFixture("echo", join(dir.path, "extra"));
    // pluginPaths would find the other first; "path" pins the entry to its own folder
    config({ pluginPaths: [join(dir.path, "extra")], plugins: { echo: { file: "echo.so", path: pinned, settings } } });
    const prompt = await tty(["approve", "echo", "--cwd", project], [{ after: "[y/N]", send: "y" }], { env });
    expect(prompt.code).toBe(0);
    expect(prompt.output).toContain(`folder        ${pinned}`);
    expect(prompt.output).toContain("settings      those of config.json entry 'echo' (keys: token, url)");
    expect(prompt.raw).not.toContain("secret-token-123");
    const refused = await cli(["load", other, "--cwd", project, "--json"], { env });
    expect(refused.json().error.message).toContain(`plugin 'echo' at ${other} was refused: config.json has an entry 'echo' and its plugin is at ${pinned} (pinned with "path")`);
  });
});

describe("changed says what changed", () => {
  test("editing the README names README.md as modified; a new file as added, a removed one as removed", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const echo = copyFixture("echo", plugins);
    writeFileSync(join(echo, "README.md"), "# echo\n");
    writeFileSync(join(echo, "notes.txt"), "old notes\n");
    await pin("echo", env);
    writeFileSync(join(echo, "README.md"), "# echo\nnow says more\n");
    const r = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(r.code).toBe(4);
    expect(r.json().error.message).toContain("its files changed since it was approved (modified: README.md)");
    expect(r.json().error.details.changes).toEqual({ added: [], removed: [], modified: ["README.md"] });
    cpSync(join(fixture("echo-twin"), "echo-twin.so"), join(echo, "extra.so"));
    rmSync(join(echo, "notes.txt"));
    const listed = (await cli(["list"], { env })).stdout;
    expect(listed).toContain("changed  modified: README.md; added: extra.so; removed: notes.txt");
    const prompt = await tty(["approve", "echo"], [{ after: "[y/N]", send: "n" }], { env });
    expect(prompt.output).toContain("Plugin echo 1.0.0 changed since you approved it.");
    expect(prompt.output).toContain("  changed       modified: README.md; added: extra.so; removed: notes.txt");
  });

  test("a file changed without changing its size is named as modified", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const echo = copyFixture("echo", plugins);
    writeFileSync(join(echo, "data.txt"), "0123456789\n");
    await pin("echo", env);
    writeFileSync(join(echo, "data.txt"), "9876543210\n");
    const r = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(r.code).toBe(4);
    expect(r.json().error.details.changes).toEqual({ added: [], removed: [], modified: ["data.txt"] });
  });

  test("an approval written by an older cxagent (no file list) is still honoured, and says it cannot list changes", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const echo = copyFixture("echo", plugins);
    const hash = (await cli(["describe", "echo", "--json"], { env })).json().hash;
    mkdirSync(join(dir.path, "state"));
    writeFileSync(join(dir.path, "state", "approvals.json"), JSON.stringify({ approvals: [{ plugin: "echo", hash, directory: echo, approvedAt: "2025-01-01T00:00:00.000Z" }] }));
    expect((await cli(["invoke", "echo", "echo_this"], { env })).code).toBe(0);
    writeFileSync(join(echo, "README.md"), "# new\n");
    const r = await cli(["invoke", "echo", "echo_this", "--json"], { env });
    expect(r.json().error.message).toContain("its files changed since it was approved (which ones is not known: the earlier approval was made by an older cxagent, which kept no file list)");
  });
});

describe("the trust prompt names every tool that asks, and how", () => {
  test("every call for gated: true, depending on the arguments for \"dynamic\"", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await tty(["approve", fixture("gates")], [{ after: "[y/N]", send: "n" }], { env });
    expect(r.output).toMatch(/ {2}asks {10}on every call: manifest_true, manifest_true_narrow; depending on the arguments: null_gate, asks, /);
  });
});
