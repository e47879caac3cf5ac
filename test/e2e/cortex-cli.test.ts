/**
 * A Cortex native plugin through the CLI as a person uses it: describe before it runs, the trust
 * prompt on a real pseudo-terminal saying that its tools are declared only by its running code,
 * describe --live after approval, calls and their exit codes, list, and discovery by name from a
 * plugin folder holding a Cortex package (manifest.toml and lib/).
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, fixtureLibrary, tempDir, tty } from "../helpers.ts";

/** Config and state of a test's own, and a Cortex package in its plugin folder. */
function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const pkg = join(dir, "config", "plugins", "native-hello");
  mkdirSync(join(pkg, "lib"), { recursive: true });
  copyFileSync(fixtureLibrary("cortex-basic"), join(pkg, "lib", "libcortex_basic.so"));
  writeFileSync(
    join(pkg, "manifest.toml"),
    'name = "cortex-basic"\nversion = "0.1.0"\ndescription = "Example \\u001b[2J trusted native Cortex plugin"\ncortex_version = "1.6.4"\n\n[native]\nlibrary = "lib/libcortex_basic.so"\nisolation = "trusted_in_process"\nabi_version = 1\n',
  );
  return { env, pkg };
}

describe("before it runs", () => {
  test("describe says what it is and where that comes from, and that its tools come only from its running code", async () => {
    using dir = tempDir();
    const { env, pkg } = world(dir.path);
    const r = await cli(["describe", "cortex-basic"], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("cortex-basic 0.1.0  (Cortex native plugin, cortex_plugin_init)\n");
    expect(r.stdout).toContain(`manifest: ${join(pkg, "manifest.toml")}\n`);
    // a string from the plugin's folder is made inert for the terminal
    expect(r.stdout).toContain("about: Example \\x1b[2J trusted native Cortex plugin\n");
    expect(r.stdout).toContain("tools: declared only by its running code; once it is approved, describe --live lists them\n");
    const json = (await cli(["describe", "cortex-basic", "--json"], { env })).json();
    expect(json).toMatchObject({ name: "cortex-basic", kind: "cortex", trust: "new", folder: pkg, cortex: { manifest: join(pkg, "manifest.toml"), versionDeclared: true } });
    expect(json.files.map((f: { path: string }) => f.path)).toEqual(["lib/libcortex_basic.so", "manifest.toml"]);
    // approved, it no longer says "once it is approved"
    expect((await cli(["approve", "cortex-basic", "--hash", json.hash], { env })).code).toBe(0);
    expect((await cli(["describe", "cortex-basic"], { env })).stdout).toContain("tools: declared only by its running code; describe --live lists them\n");
  });

  test("list shows it as a Cortex plugin whose tools are declared when it runs", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await cli(["list"], { env });
    expect(r.stdout).toContain("cortex-basic 0.1.0  not approved\n");
    expect(r.stdout).toContain("  kind     Cortex native plugin: its tools are declared only when it runs (describe --live)\n");
    expect((await cli(["list", "--json"], { env })).json().plugins[0]).toMatchObject({ name: "cortex-basic", kind: "cortex", version: "0.1.0", tools: [] });
  });

  test("unapproved and without a terminal, a call is refused with exit 4 and the command that approves it", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await cli(["invoke", "cortex-basic", "echo", "--json"], { env });
    expect(r.code).toBe(4);
    expect(r.json().error.code).toBe("E_NOT_APPROVED");
    expect(r.json().error.hint).toContain(`cxagent approve cortex-basic --hash ${r.json().error.details.hash}`);
  });
});

describe("the trust prompt, then calls", () => {
  test("on a terminal it asks, saying plainly that its tools are declared only by its running code", async () => {
    using dir = tempDir();
    const { env, pkg } = world(dir.path);
    const r = await tty(["invoke", "cortex-basic", "echo", "--args", '{"hi": 1}'], [{ after: "Approve these exact files?", send: "y" }], { env });
    expect(r.output).toContain("Plugin cortex-basic 0.1.0 has not been approved yet.");
    expect(r.output).toContain(`  kind          Cortex native plugin (cortex_plugin_init); name and version from ${join(pkg, "manifest.toml")}`);
    expect(r.output).toContain("  tools         declared only by its running code, so none can be shown before it runs;");
    expect(r.output).toContain("                once approved, `describe --live` lists them");
    expect(r.output).not.toContain("\x1b[2J");
    expect(r.output).toContain('{"hi":1}');
    expect(r.code).toBe(0);

    const live = await cli(["describe", "cortex-basic", "--live"], { env });
    expect(live.code).toBe(0);
    expect(live.stdout).toContain("live: the running plugin is cortex-basic 1.0.0 — The Cortex ABI test fixture, with 12 tools:\n");
    expect(live.stdout).toContain("  write_note  — Writes a note (always asks).\n      permission: asks on every call (an effect it declares needs confirmation), never offers Always\n");
    expect(live.stdout).toContain("  slow  — Sleeps ms milliseconds.\n      permission: never asks; default deadline 1 s (its timeout_secs)\n");
    const json = (await cli(["describe", "cortex-basic", "--live", "--json"], { env })).json();
    expect(json.live).toMatchObject({ matches: true, difference: null, deadlines: [{ tool: "slow", ms: 1000 }], about: "The Cortex ABI test fixture" });
    expect(json.live.manifest.tools.map((t: { name: string }) => t.name)).toContain("peek");
    expect(json.live.warnings).toEqual([]);
    expect(live.stdout).not.toContain("warning:");
  }, 30_000);

  test("the SDK quick start's shape (plugin_info and manifest.toml name it differently) loads under the manifest's name; the prompt and describe --live say so", async () => {
    using dir = tempDir();
    const { env, pkg } = world(dir.path);
    writeFileSync(join(pkg, "manifest.toml"), 'name = "native-hello"\nversion = "0.1.0"\n[native]\nlibrary = "lib/libcortex_basic.so"\nisolation = "trusted_in_process"\nabi_version = 1\n');
    const r = await tty(["invoke", "native-hello", "echo", "--args", '{"hi": 2}'], [{ after: "Approve these exact files?", send: "y" }], { env });
    expect(r.output).toContain("  name          the manifest's; a plugin_info naming it otherwise is warned about once it runs, not refused");
    expect(r.output).toContain('{"hi":2}');
    const told = await cli(["invoke", "native-hello", "invocation"], { env });
    expect(JSON.parse(told.stdout)).toMatchObject({ tool_name: "invocation", actor: null, source: "cli", execution_scope: "foreground" });
    expect(r.code).toBe(0);
    const live = await cli(["describe", "native-hello", "--live"], { env });
    expect(live.code).toBe(0);
    expect(live.stdout).toContain("live: the running plugin is native-hello 1.0.0");
    expect(live.stdout).toContain(`warning: plugin_info names it 'cortex-basic', but its manifest ${join(pkg, "manifest.toml")} names it 'native-hello': cxagent uses the manifest's name`);
  }, 30_000);

  test("calls: success exits 0, is_error exits 1, a bad reply 5, a gated tool without a terminal 4 unless --allow", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const hash = (await cli(["describe", "cortex-basic", "--json"], { env })).json().hash;
    expect((await cli(["approve", "cortex-basic", "--hash", hash], { env })).code).toBe(0);

    const echo = await cli(["invoke", "cortex-basic", "echo", "--args", '{"text": "hello"}'], { env });
    expect(echo).toMatchObject({ code: 0, stdout: '{"text":"hello"}\n' });
    const failed = await cli(["invoke", "cortex-basic", "fail", "--json"], { env });
    expect(failed.code).toBe(1);
    expect(failed.json().result).toMatchObject({ success: false, errorMessage: "it failed on purpose" });
    const bad = await cli(["invoke", "cortex-basic", "malformed", "--args", '{"how": "no_output"}', "--json"], { env });
    expect(bad.code).toBe(5);
    expect(bad.json().error).toMatchObject({ code: "E_BAD_REPLY", message: expect.stringContaining('tool_execute returned a ToolResult without "output"') });
    const gated = await cli(["invoke", "cortex-basic", "write_note", "--json"], { env });
    expect(gated.code).toBe(4);
    expect((await cli(["invoke", "cortex-basic", "write_note", "--allow"], { env })).stdout).toBe("done\n");
    const late = await cli(["invoke", "cortex-basic", "slow", "--args", '{"ms": 5000}', "--json"], { env });
    expect(late.code).toBe(6);
    expect(late.json().error.message).toContain("timeout_secs 1");
    // next.ms is the deadline that was too short, as for every timeout; the hint asks for more than it
    expect(late.json().error.next).toEqual({ do: "raise-timeout", ms: 1000 });
    expect(late.json().error.hint).toContain("give a longer --timeout than 1000 ms");
    const loaded = await cli(["load", "cortex-basic"], { env });
    expect(loaded.stdout).toContain("loaded cortex-basic 1.0.0: 12 tools\n");
    expect(loaded.stdout).toContain("claim the tool names it declared");
  }, 30_000);
});
