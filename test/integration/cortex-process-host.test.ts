/**
 * The Cortex process plugin's host (plugin-host/process.ts) as it starts: a tool's command must be
 * a file of the approved folder (or, outside it, a file at all), it runs from the approved copy,
 * made executable there, with its arguments and working folder as written. Real plugin hosts and
 * processes; the plugin is a copy of the project's fixture with its manifest.toml rewritten.
 */
import { expect, test } from "bun:test";
import { chmodSync, cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSession, refusal, ROOT, tempDir } from "../helpers.ts";

const FIXTURE = join(ROOT, "test/fixtures/cortex-process");
const HEAD = 'name = "host-case"\nversion = "1.0.0"\n[native]\nisolation = "process"\n';

/** A plugin folder with the fixture's tool.sh and this manifest.toml. */
function plugin(dir: string, manifest: string): string {
  const folder = join(dir, "pkg");
  mkdirSync(folder, { recursive: true });
  cpSync(join(FIXTURE, "tool.sh"), join(folder, "tool.sh"));
  writeFileSync(join(folder, "manifest.toml"), manifest);
  return folder;
}
const tool = (name: string, rest: string) => `[[native.tools]]\nname = "${name}"\ndescription = "d"\n${rest}\n`;

test("a command that is not a file of its folder: the plugin is refused at load, naming the tool and the path", async () => {
  using dir = tempDir();
  await using session = await openSession();
  const error = await refusal(session.load(plugin(dir.path, HEAD + tool("gone", 'command = "missing.sh"'))));
  expect(error.code).toBe("E_MANIFEST");
  expect(error.message).toContain("tool 'gone' runs missing.sh, which is not a file in the plugin's folder");
});

test("outside its folder (allow_host_paths): a command that is not a file is refused, naming where it was looked for", async () => {
  using dir = tempDir();
  await using session = await openSession();
  for (const [command, shown] of [["/nonexistent/tool", "/nonexistent/tool"], ["/tmp", "/tmp"], ["../nothing.sh", join(dir.path, "nothing.sh")]]) {
    const error = await refusal(session.load(plugin(dir.path, HEAD.replace("[native]\n", "[native]\nallow_host_paths = true\n") + tool("out", `command = "${command}"`))));
    expect([command, error.code]).toEqual([command, "E_MANIFEST"]);
    expect(error.message).toContain(`tool 'out' runs ${shown}, which is not a file`);
  }
});

test("a command of its folder runs from the approved copy, made executable, written as ./x or plain; args and working_dir as written", async () => {
  using dir = tempDir();
  const manifest = HEAD +
    tool("dotted", 'command = "./tool.sh"') +
    tool("where", 'command = "bin/where.sh"\nargs = ["one", "two words"]\nworking_dir = "sub"') +
    tool("plain", 'command = "bin/where.sh"');
  const folder = plugin(dir.path, manifest);
  mkdirSync(join(folder, "bin"));
  mkdirSync(join(folder, "sub"));
  writeFileSync(join(folder, "sub", "keep"), "");
  // not executable as shipped: the host makes its copy so
  writeFileSync(join(folder, "bin", "where.sh"), '#!/bin/sh\nprintf \'"%s|%s|%s|%s"\\n\' "$(pwd)" "$0" "$1" "$2"\n');
  chmodSync(join(folder, "bin", "where.sh"), 0o644);
  chmodSync(join(folder, "tool.sh"), 0o644);
  await using session = await openSession();
  const p = await session.load(folder);
  expect(p.exports).toEqual([]); // no optional export: each call is the tool's command
  expect((await p.invoke("dotted", { fault: "ok" })).output.content).toBe('{"tool":"dotted","input":{"fault":"ok"}}');
  // without working_dir: the approved copy's root, not the folder as shipped
  const [root] = String((await p.invoke("plain", {})).output.content).split("|");
  expect(root!.startsWith(folder)).toBe(false);
  expect(String((await p.invoke("where", {})).output.content)).toBe(`${root}/sub|${root}/bin/where.sh|one|two words`);
});

test("outside its folder (allow_host_paths): the command and working folder are resolved from the plugin's folder", async () => {
  using dir = tempDir();
  mkdirSync(join(dir.path, "work"));
  writeFileSync(join(dir.path, "outside.sh"), '#!/bin/sh\nprintf \'"%s %s"\\n\' "$(pwd)" "$1"\n');
  chmodSync(join(dir.path, "outside.sh"), 0o755);
  const folder = plugin(dir.path, HEAD.replace("[native]\n", "[native]\nallow_host_paths = true\n") + tool("out", 'command = "../outside.sh"\nargs = ["arg"]\nworking_dir = "../work"'));
  await using session = await openSession();
  const p = await session.load(folder);
  expect((await p.invoke("out", {})).output.content).toBe(`${join(dir.path, "work")} arg`);
});

test("its environment: inherit_env taken from the host where set, env over it", async () => {
  using dir = tempDir();
  const folder = plugin(dir.path, HEAD + tool("env", 'command = "tool.sh"\ninherit_env = ["PATH", "CX_PROBE_SET", "CX_PROBE_UNSET", "CX_PROBE_BOTH"]\nenv = { CX_PROBE_BOTH = "from-manifest" }'));
  chmodSync(join(folder, "tool.sh"), 0o755);
  await using session = await openSession({ env: { CX_PROBE_SET: "from-host", CX_PROBE_BOTH: "from-host" } });
  const env = String((await (await session.load(folder)).invoke("env", { fault: "env" })).output.content).trim().split(" ");
  expect(env.filter((e) => e.startsWith("CX_PROBE")).sort()).toEqual(["CX_PROBE_BOTH=from-manifest", "CX_PROBE_SET=from-host"]);
});
