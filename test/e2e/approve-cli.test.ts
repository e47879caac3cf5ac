/**
 * What `cxagent approve` says (src/cli/commands/approve.ts): its help, and its one line of text
 * for each outcome — approved at a terminal, by pinned hash, already approved, and a plugin
 * described once after approval (issue 42 point 2). Its JSON and its describing are tested in
 * test/e2e/trust-cli.test.ts and test/mcp/cortex-approve.test.ts.
 */
import { expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { cli, copyFixture, fixture, tempDir, tty } from "../helpers.ts";

function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const plugins = join(dir, "config", "plugins");
  mkdirSync(plugins, { recursive: true });
  return { env, plugins };
}
const hashOf = async (ref: string, env: Record<string, string>) => (await cli(["describe", ref, "--json"], { env })).json().hash as string;

test("its help names the command, what it does and each of its options", async () => {
  const help = await cli(["approve", "--help"]);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain("Approve a plugin's exact files: asks on a terminal, or checks a pinned hash (");
  expect(help.stdout).toMatch(/cxagent approve v\d/);
  expect(help.stdout).toMatch(/--hash=<HEX>\s+Approve without asking, only if the files hash to this \(64 hex digits\)/);
  expect(help.stdout).toMatch(/--describe\s+Once approved, start a plugin that declares its tools only when it runs \(a Cortex native one\) and keep what it describes, so `cxagent mcp` lists it without running it/);
  expect(help.stdout).toMatch(/--no-describe\s+Run nothing: such a plugin is then described at its first start/);
  const top = await cli(["--help"]);
  expect(top.stdout).toMatch(/approve\s+Approve a plugin's exact files, interactively or by pinned hash/);
});

test("by pinned hash, then again: each says so in one line", async () => {
  using dir = tempDir();
  const { env, plugins } = world(dir.path);
  const echo = copyFixture("echo", plugins);
  const hash = await hashOf("echo", env);
  const first = await cli(["approve", "echo", "--hash", hash], { env });
  expect(first.code).toBe(0);
  expect(first.stdout).toBe(`approved echo 1.0.0 at ${echo} by pinned hash (hash ${hash})\n`);
  const again = await cli(["approve", "echo", "--hash", hash], { env });
  expect(again.stdout).toBe(`echo 1.0.0 is already approved at ${echo} (hash ${hash})\n`);
});

test("at a terminal: approved, with no word of a pinned hash", async () => {
  using dir = tempDir();
  const { env, plugins } = world(dir.path);
  const echo = copyFixture("echo", plugins);
  const hash = await hashOf("echo", env);
  const r = await tty(["approve", "echo"], [{ after: "Approve these exact files? [y/N]", send: "y" }], { env });
  expect(r.code).toBe(0);
  expect(r.output).toContain(`approved echo 1.0.0 at ${echo} (hash ${hash})\n`);
});

test("a plugin described once after approval says how many tools it described", async () => {
  using dir = tempDir();
  const { env } = world(dir.path);
  const basic = fixture("cortex-basic");
  const hash = await hashOf(basic, env);
  const r = await cli(["approve", basic, "--hash", hash], { env });
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^approved cortex-basic \\(version unknown\\) at ${basic} by pinned hash \\(hash ${hash}\\); described: (\\d+) tools\\n$`));
  expect(Number(/described: (\d+) tools/.exec(r.stdout)![1])).toBeGreaterThan(5);
});
