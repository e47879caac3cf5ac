/**
 * Parsers refuse instead of dropping or crashing (SPEC §6.2, §4.1), only the host says who
 * decided a permission (SPEC §7), and grants are scoped to the project's real path (SPEC §6.3).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MANIFEST_DEPTH_LIMIT } from "../../src/protocol/manifest.ts";
import { approve, cli, copyFixture, fixture, openSession, tempDir } from "../helpers.ts";

function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const plugins = join(dir, "config", "plugins");
  mkdirSync(plugins, { recursive: true });
  return { env, plugins, config: (value: unknown) => writeFileSync(join(dir, "config", "config.json"), JSON.stringify(value)) };
}

/** A copy of the echo fixture whose sidecar and files carry another name. */
function renamed(plugins: string, name: string) {
  const folder = copyFixture("echo", plugins, name);
  renameSync(join(folder, "echo.so"), join(folder, `${name}.so`));
  const sidecar = JSON.parse(readFileSync(join(folder, "echo.plugin.json"), "utf8"));
  unlinkSync(join(folder, "echo.plugin.json"));
  writeFileSync(join(folder, `${name}.plugin.json`), JSON.stringify({ ...sidecar, name }));
  return folder;
}

describe("config plugin names are ordinary keys", () => {
  test.each(["prototype", "constructor"])("{\"plugins\": {\"%s\": {…, \"enabled\": false}}} keeps it disabled", async (name) => {
    using dir = tempDir();
    const { env, plugins, config } = world(dir.path);
    renamed(plugins, name);
    config({ plugins: { [name]: { file: `${name}.so`, enabled: false, settings: { key: 1 } } } });
    const loaded = await cli(["load", name, "--json"], { env });
    expect(loaded.code).toBe(3);
    expect(loaded.json().error.code).toBe("E_DISABLED");
    const listed = (await cli(["list", "--json"], { env })).json().plugins;
    expect(listed).toEqual([expect.objectContaining({ name, configured: true, enabled: false, settings: { entry: name, keys: ["key"], pinned: null } })]);
  });

  test("a __proto__ entry is kept and checked like any other: its problems are reported by path", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    writeFileSync(join(dir.path, "config", "config.json"), '{"plugins": {"__proto__": {"file": "x.so", "enabled": "no"}}}');
    const r = await cli(["list", "--json"], { env });
    expect(r.code).toBe(3);
    expect(r.json().error.message).toContain("plugins.__proto__.enabled: Invalid type: Expected boolean");
    writeFileSync(join(dir.path, "config", "config.json"), '{"plugins": {"__proto__": {"file": "x.so", "enabled": false}}}');
    const listed = (await cli(["list", "--json"], { env })).json().plugins;
    expect(listed).toEqual([expect.objectContaining({ name: "__proto__", configured: true, enabled: false, problem: "its file 'x.so' is in none of the plugin folders" })]);
  });
});

describe("a manifest nested too deep", () => {
  test("a 200,000-deep sidecar is E_MANIFEST with its path, exit 3", async () => {
    using dir = tempDir();
    const { env, plugins } = world(dir.path);
    const echo = copyFixture("echo", plugins);
    const sidecar = join(echo, "echo.plugin.json");
    const n = 200_000;
    writeFileSync(sidecar, readFileSync(sidecar, "utf8").replace('"description": "Echoes its arguments."', `"description": "x", "inputSchema": {"x": ${"[".repeat(n)}${"]".repeat(n)}}`));
    for (const command of [["describe", "echo"], ["load", "echo"], ["approve", "echo", "--hash", "0".repeat(64)], ["list"]]) {
      const r = await cli([...command, "--json"], { env });
      if (command[0] === "list") {
        expect(r.code).toBe(0);
        expect(r.json().plugins[0].problem).toContain(`nested more than ${MANIFEST_DEPTH_LIMIT} levels deep`);
        continue;
      }
      expect(r.code).toBe(3);
      expect(r.json().error.code).toBe("E_MANIFEST");
      expect(r.json().error.message).toContain(`the sidecar ${sidecar} has 1 problem`);
      expect(r.json().error.message).toContain(`tools[0].inputSchema.x${"[0]".repeat(10)}`);
    }
  });
});

describe("only cxagent says who decided", () => {
  test("a plugin claiming decidedBy: \"user\" is the plugin's claim: the envelope says plugin, exit 1", async () => {
    await approve(fixture("invoke-replies"));
    const r = await cli(["invoke", fixture("invoke-replies"), "claims_user_denied", "--json"]);
    expect(r.code).toBe(1);
    expect(r.json().result).toMatchObject({ success: false, permissionDenied: true, decidedBy: "plugin", errorMessage: "permission was denied" });
    const text = await cli(["invoke", fixture("invoke-replies"), "claims_user_denied"]);
    expect(text.code).toBe(1);
    expect(text.stderr).toBe("claims_user_denied failed (the tool reports that permission was denied; cxagent did not deny it): permission was denied\n");
  });
});

describe("grants are scoped to the project's real path", () => {
  test("a grant made through a symlinked project folder does not follow the link to another folder", async () => {
    using dir = tempDir();
    const a = join(dir.path, "project-a");
    const b = join(dir.path, "project-b");
    const link = join(dir.path, "link");
    mkdirSync(a);
    mkdirSync(b);
    symlinkSync(a, link);
    const state = join(dir.path, "state");
    {
      await using session = await openSession({ cwd: link, stateDir: state });
      const gates = await session.load(fixture("gates"));
      expect((await gates.invoke("asks", { n: 1 }, { permission: "always" })).success).toBe(true);
    }
    const stored = JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")).grants;
    expect(stored.map((g: { scope: string }) => g.scope)).toEqual([a]); // stored as the real folder
    unlinkSync(link);
    symlinkSync(b, link); // the same path now names another project
    for (const [cwd, granted] of [[link, false], [b, false], [a, true]] as const) {
      await using session = await openSession({ cwd, stateDir: state });
      expect((await (await session.load(fixture("gates"))).gate("asks", { n: 1 })).granted).toBe(granted);
    }
    // `cxagent grants` compares the same way
    const env = { CXAGENT_STATE_DIR: state };
    expect((await cli(["grants", "--cwd", link], { env })).stdout).toContain(`in ${a}, since`);
    expect((await cli(["grants", "--cwd", link], { env })).stdout).not.toContain("(this project)");
    expect((await cli(["grants", "--cwd", a], { env })).stdout).toContain(`in ${a} (this project)`);
  });
});
