/**
 * A Cortex process plugin through the CLI as a person uses it (examples/cortex-process): describe
 * lists its tools from its manifest.toml before anything runs, the trust prompt on a real
 * pseudo-terminal names each tool's command (and a path outside its folder), a call, and
 * `cxagent check` running every tool.
 */
import { expect, test } from "bun:test";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, ROOT, tempDir, tty } from "../helpers.ts";

const EXAMPLE = join(ROOT, "examples/cortex-process");

function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const pkg = join(dir, "config", "plugins", "shell-tools");
  cpSync(EXAMPLE, pkg, { recursive: true });
  return { env, pkg };
}

test("describe lists its tools from manifest.toml; nothing runs", async () => {
  using dir = tempDir();
  const { env, pkg } = world(dir.path);
  const r = await cli(["describe", "shell-tools"], { env });
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(`manifest: ${join(pkg, "manifest.toml")} (a Cortex process plugin: each call runs its tool's command)`);
  expect(r.stdout).toContain("  shell_word_count  — Counts the words, lines and characters of a text.");
  expect(r.stdout).toContain("      arguments: text  string  required  The text to count");
});

test("the trust prompt names each tool's command, and what it runs from outside its folder; then a call", async () => {
  using dir = tempDir();
  const { env, pkg } = world(dir.path);
  writeFileSync(join(pkg, "manifest.toml"), readFileSync(join(pkg, "manifest.toml"), "utf8").replace('isolation = "process"', 'isolation = "process"\nallow_host_paths = true').replace('command = "tools.sh"\nargs = ["host"]', 'command = "/bin/sh"\nargs = ["tools.sh", "host"]\nworking_dir = "."'));
  const r = await tty(["invoke", "shell-tools", "shell_word_count", "--args", '{"text": "a b"}'], [{ after: "Approve these exact files?", send: "y" }], { env });
  expect(r.output).toContain(`  kind          Cortex process plugin (${join(pkg, "manifest.toml")}): each call runs its tool's command`);
  expect(r.output).toContain('  runs          shell_word_count: "tools.sh" "count"');
  expect(r.output).toContain('                shell_host_info: "/bin/sh" "tools.sh" "host"');
  expect(r.output).toContain("  outside       runs from outside its folder (allow_host_paths): /bin/sh (tool shell_host_info)");
  expect(r.output).toContain("2 words, 1 lines, 3 characters");
  expect(r.code).toBe(0);
  const host = await cli(["invoke", "shell-tools", "shell_host_info"], { env });
  expect(host.code).toBe(0);
  expect(host.stdout).toContain("Linux");
}, 30_000);

test("cxagent check runs every tool of it", async () => {
  using dir = tempDir();
  const { env } = world(dir.path);
  const hash = (await cli(["describe", "shell-tools", "--json"], { env })).json().hash;
  const r = await cli(["check", "shell-tools", "--hash", hash, "--json"], { env });
  expect(r.code).toBe(0);
  const report = r.json();
  expect(report).toMatchObject({ ok: true, kind: "cortex-process", counts: { fail: 0 } });
  const status = Object.fromEntries(report.checks.map((c: { id: string; status: string }) => [c.id, c.status]));
  expect(status).toMatchObject({ sidecar: "pass", schemas: "pass", describe: "pass", results: "pass", content: "pass", "bad-arguments": "pass", concurrency: "pass", stop: "pass", registers: "pass" });
}, 60_000);
