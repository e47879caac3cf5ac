/**
 * Discovery, configuration, sidecars and trust through the library: real folders, real fixtures.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/index.ts";
import { CALCULATOR, copyFixture, fixture, fixtureLibrary, hostsOf, openSession, refusal, tempDir, until, within } from "../helpers.ts";

/** A session in its own config and state folders. */
function isolated(dir: string, options: Parameters<typeof Session.open>[0] = {}) {
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "project"), { recursive: true });
  return Session.open({ cwd: join(dir, "project"), configDir: join(dir, "config"), stateDir: join(dir, "state"), confirmTrust: null, ...options });
}


describe("no plugin code before trust", () => {
  test("a refused load never maps the library: its constructor's marker does not exist", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("ctor-marker", dir.path);
    {
      await using session = await isolated(dir.path, { env: { CXAGENT_FX_MARKER: marker } });
      const error = await refusal(session.load(plugin));
      expect(error.code).toBe("E_NOT_APPROVED");
      // The library names no command: it says what to do as data, for whoever words it.
      expect(error.next).toEqual({ do: "approve", ref: plugin, hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(error.hint).not.toContain("cxagent");
      expect(existsSync(marker)).toBe(false);
    }
    {
      // a person says no at the prompt: still nothing runs
      await using session = await isolated(dir.path, { env: { CXAGENT_FX_MARKER: marker }, confirmTrust: async () => false });
      expect((await refusal(session.load(plugin))).code).toBe("E_DENIED");
      expect(existsSync(marker)).toBe(false);
    }
    {
      // the same load, approved: the constructor runs, so the marker does prove loading
      await using session = await isolated(dir.path, { env: { CXAGENT_FX_MARKER: marker }, confirmTrust: async () => true });
      await session.load(plugin);
      expect(readFileSync(marker, "utf8")).toBe("the ctor-marker library was loaded\n");
    }
  });

  test("a missing sidecar refuses the load before any process exists", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("ctor-marker", dir.path);
    rmSync(join(plugin, "ctor-marker.plugin.json"));
    await using session = await isolated(dir.path, { env: { CXAGENT_FX_MARKER: marker }, confirmTrust: async () => true });
    const error = await refusal(session.load(join(plugin, "ctor-marker.so")));
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain("has no sidecar ctor-marker.plugin.json beside it");
    expect(existsSync(marker)).toBe(false);
  });

  test.each([
    ["an out-of-range contract", { pluginContract: 7 }, "pluginContract: contract 7 is outside the range this host accepts (2..4)"],
    ["an unknown key", { providers: [] }, "manifest declares 'providers', which this build does not service"],
  ])("a sidecar with %s refuses the load before any process exists", async (_what, change, message) => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("ctor-marker", dir.path);
    const sidecar = join(plugin, "ctor-marker.plugin.json");
    writeFileSync(sidecar, JSON.stringify({ ...JSON.parse(readFileSync(sidecar, "utf8")), ...change }));
    await using session = await isolated(dir.path, { env: { CXAGENT_FX_MARKER: marker }, confirmTrust: async () => true });
    const error = await refusal(session.load(plugin));
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain(message);
    expect(existsSync(marker)).toBe(false);
  });

  test("a library replaced after approval is refused: its bytes are not the approved ones", async () => {
    using dir = tempDir();
    const plugin = copyFixture("echo", dir.path);
    {
      await using session = await isolated(dir.path, { confirmTrust: async () => true });
      await session.load(plugin);
    }
    copyFileSync(fixture("echo-twin") + "/echo-twin.so", join(plugin, "echo.so"));
    await using session = await isolated(dir.path);
    const error = await refusal(session.load(plugin));
    expect(error.code).toBe("E_NOT_APPROVED");
    expect(error.message).toContain("its files changed since it was approved");
  });

  test("a library swapped while the person is being asked: the approved bytes are the ones that run", async () => {
    using dir = tempDir();
    const plugin = copyFixture("echo", dir.path);
    await using session = await isolated(dir.path, {
      confirmTrust: async () => {
        // between hashing and loading, someone replaces the library with another plugin's
        copyFileSync(join(fixture("echo-twin"), "echo-twin.so"), join(plugin, "echo.so"));
        return true;
      },
    });
    const loaded = await session.load(plugin);
    // describe came from the approved library: the swapped one would describe 'echo-twin'
    expect(loaded.manifest.name).toBe("echo");
    expect((await loaded.invoke("echo_that", { x: 1 })).output.arguments).toEqual({ x: 1 });
  });
});

describe("sidecar and describe must agree", () => {
  const differences: [string, string][] = [
    ["version", 'the sidecar declares version="1.0.0", describe returned version="1.0.1"'],
    ["instructions", 'the sidecar declares instructions=null, describe returned instructions="surprise"'],
    ["spawns", "the sidecar declares spawns=false, describe returned spawns=true"],
    ["missing-tool", "tool 'second' is in the sidecar but describe did not return it"],
    ["extra-tool", "tool 'third' was returned by describe but is not in the sidecar"],
    ["description", `tool 'first': the sidecar declares description="one", describe returned description="uno"`],
    ["gated", "tool 'first': the sidecar declares gated=true, describe returned gated=false"],
    ["always", "tool 'first': the sidecar declares alwaysAskable=true, describe returned alwaysAskable=false"],
    ["schema", `tool 'first': the sidecar declares inputSchema={"type":"object","properties":{"x":{"type":"number"}}}`],
    ["command", `command 'hello' differs`],
  ];
  test.each(differences)("a different %s refuses the load, naming it", async (diff, message) => {
    await using session = await openSession({ env: { CXAGENT_FX_DIFF: diff } });
    const error = await refusal(session.load(fixture("describe-differs")));
    expect(error.code).toBe("E_MISMATCH");
    expect(error.message).toContain("plugin 'describe-differs' was refused: ");
    expect(error.message).toContain(message);
  });

  test("a plugin host started again after a crash must describe what was loaded: E_MISMATCH names the difference", async () => {
    using dir = tempDir();
    // the fixture's second plugin host (and any later one) drops the gate of its tool 'guarded'
    await using session = await openSession({ env: { CXAGENT_FX_STARTS: dir.path } });
    const plugin = await session.load(fixture("describe-changes-on-restart"));
    expect(plugin.tool("guarded").gated).toBe(true);
    expect((await refusal(plugin.invoke("crash"))).code).toBe("E_CRASHED");
    const error = await refusal(within(plugin.invoke("guarded", {}, { permission: "once" }), 20_000, "the call after the crash"));
    expect(error.code).toBe("E_MISMATCH");
    expect(error.message).toBe(
      "plugin 'describe-changes-on-restart' described a different manifest after a restart: tool 'guarded': the manifest it was loaded with declares gated=true, the restarted plugin host returned gated=false",
    );
    expect(plugin.tool("guarded").gated).toBe(true); // what the person approved still holds
    await until(() => hostsOf(fixtureLibrary("describe-changes-on-restart")).length === 0, 5000, "the refused plugin host to end");
  });

  test("key order and whitespace do not matter", async () => {
    await using session = await openSession({ env: { CXAGENT_FX_DIFF: "reordered" } });
    expect((await session.load(fixture("describe-differs"))).name).toBe("describe-differs");
  });
});

describe("names", () => {
  test("a tool named like a built-in refuses the whole plugin, naming the tool and its holder", async () => {
    await using session = await openSession();
    const error = await refusal(session.load(fixture("claims-read-file")));
    expect(error.code).toBe("E_COLLISION");
    expect(error.message).toBe("plugin 'claims-read-file' was refused: its tool 'read_file' is a built-in tool's name");
    expect(session.plugins).toEqual([]);
  });

  test("a tool already held by another plugin refuses the newcomer, naming the holder", async () => {
    await using session = await openSession();
    await session.load(fixture("echo"));
    const error = await refusal(session.load(fixture("echo-twin")));
    expect(error.message).toBe("plugin 'echo-twin' was refused: its tool 'echo_this' is already held by plugin 'echo'");
    expect(session.plugins.map((p) => p.name)).toEqual(["echo"]);
  });

  test("an instructions-only plugin loads, and instructions compose under headings naming tools", async () => {
    await using session = await openSession();
    await session.load(fixture("echo"));
    const style = await session.load(fixture("house-style"));
    expect(style.tools).toEqual([]);
    await session.load(CALCULATOR);
    const calculatorText = JSON.parse(readFileSync(join(CALCULATOR, "calculator.plugin.json"), "utf8")).instructions;
    expect(session.instructions()).toBe(
      `## echo_this, echo_that\n\nEcho tools for tests.\n\n## house-style (no tools)\n\nPrefer small functions.\n\n## calc_add, calc_multiply, calc_divide\n\n${calculatorText}\n`,
    );
    await session.unload("house-style");
    expect(session.instructions()).not.toContain("Prefer small functions.");
  });
});

describe("configuration and discovery", () => {
  function writeConfig(dir: string, config: unknown) {
    writeFileSync(join(dir, "config", "config.json"), typeof config === "string" ? config : JSON.stringify(config));
  }

  test("config errors are reported by path, all at once, naming the file", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "config"));
    writeConfig(dir.path, { pluginPaths: "plugins", plugins: { calc: { file: "calculator.so", enabled: "yes", colour: "red" } }, theme: 1 });
    const error = await refusal(isolated(dir.path));
    expect(error.code).toBe("E_CONFIG");
    expect(error.message).toContain(join(dir.path, "config", "config.json"));
    for (const part of [
      "pluginPaths: Invalid type: Expected Array",
      "plugins.calc.enabled: Invalid type: Expected boolean",
      "plugins.calc declares 'colour', which this build does not service",
      "config file declares 'theme', which this build does not service",
    ]) {
      expect(error.message).toContain(part);
    }
  });

  test("config that is not JSON names the file", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "config"));
    writeConfig(dir.path, "{ plugins: ");
    const error = await refusal(isolated(dir.path));
    expect(error.code).toBe("E_CONFIG");
    expect(error.message).toContain(`${join(dir.path, "config", "config.json")} is invalid: it is not valid JSON`);
  });

  test("search order: pluginPaths, then the project's .cxagent/plugins, then the config folder; first match wins", async () => {
    using dir = tempDir();
    const configPlugins = join(dir.path, "config", "plugins");
    const projectPlugins = join(dir.path, "project", ".cxagent", "plugins");
    const extra = join(dir.path, "extra");
    for (const d of [configPlugins, projectPlugins, extra]) mkdirSync(d, { recursive: true });
    copyFixture("echo", configPlugins);
    copyFixture("echo", projectPlugins);
    writeConfig(dir.path, {});
    {
      await using session = await isolated(dir.path, { confirmTrust: async () => true });
      expect(session.locate("echo")).toMatchObject({ how: "discovery", folder: join(projectPlugins, "echo") });
    }
    copyFixture("echo", extra);
    writeConfig(dir.path, { pluginPaths: ["../extra"] }); // relative to the project folder
    {
      await using session = await isolated(dir.path, { confirmTrust: async () => true });
      expect(session.locate("echo").folder).toBe(join(extra, "echo"));
      expect((await session.load("echo")).name).toBe("echo");
    }
    process.env.CXAGENT_TEST_EXTRA = extra;
    writeConfig(dir.path, { pluginPaths: ["$CXAGENT_TEST_EXTRA"] });
    {
      await using session = await isolated(dir.path);
      expect(session.locate("echo").folder).toBe(join(extra, "echo"));
    }
  });

  test("a loose library wins over a subfolder; dot folders are skipped; never deeper than one level", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "config", "plugins");
    mkdirSync(plugins, { recursive: true });
    writeConfig(dir.path, {});
    copyFixture("echo", plugins, "a-echo"); // plugins/a-echo/echo.so
    for (const f of ["echo.so", "echo.plugin.json"]) copyFileSync(join(fixture("echo"), f), join(plugins, f)); // loose
    for (const hidden of [join(plugins, ".hidden"), join(plugins, "nested", "deeper")]) {
      mkdirSync(hidden, { recursive: true });
      for (const f of ["house-style.so", "house-style.plugin.json"]) copyFileSync(join(fixture("house-style"), f), join(hidden, f));
    }
    await using session = await isolated(dir.path);
    expect(session.locate("echo")).toMatchObject({ folder: plugins, library: join(plugins, "echo.so") });
    expect(() => session.locate("house-style")).toThrow("no plugin named 'house-style'");
  });

  test("a configured name resolves through its file; its settings reach start verbatim", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "config", "plugins");
    mkdirSync(plugins, { recursive: true });
    copyFixture("echo", plugins, "echo-folder");
    const settings = { nested: { list: [1, "two", null], flag: true }, "odd key": "ü" };
    writeConfig(dir.path, { plugins: { echo: { file: "echo.so", settings } } });
    await using session = await isolated(dir.path, { confirmTrust: async () => true });
    expect(session.locate("echo")).toMatchObject({ how: "config", configName: "echo" });
    const echo = await session.load("echo");
    const context = (await echo.invoke("echo_this")).output.context as Record<string, unknown>;
    expect(context).toEqual({ workingDirectory: join(dir.path, "project"), settings, hostContract: 4 });
  });

  test("enabled: false loads nothing unless --once, and --once still needs trust", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "config", "plugins");
    mkdirSync(plugins, { recursive: true });
    copyFixture("echo", plugins);
    writeConfig(dir.path, { plugins: { echo: { file: "echo.so", enabled: false } } });
    {
      await using session = await isolated(dir.path, { confirmTrust: async () => true });
      const error = await refusal(session.load("echo"));
      expect(error.code).toBe("E_DISABLED");
      expect(error.next).toEqual({ do: "load-once", ref: "echo" });
    }
    {
      await using session = await isolated(dir.path);
      expect((await refusal(session.load("echo", { once: true }))).code).toBe("E_NOT_APPROVED");
    }
    {
      await using session = await isolated(dir.path, { confirmTrust: async () => true });
      expect((await session.load("echo", { once: true })).name).toBe("echo");
    }
  });

  test("a configured file that is nowhere, and a config name that differs from the sidecar's", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "config", "plugins");
    mkdirSync(plugins, { recursive: true });
    copyFixture("echo", plugins);
    writeConfig(dir.path, { plugins: { ghost: { file: "ghost.so" }, other: { file: "echo.so" } } });
    await using session = await isolated(dir.path, { confirmTrust: async () => true });
    const ghost = await refusal(session.load("ghost"));
    expect(ghost.code).toBe("E_NOT_FOUND");
    expect(ghost.message).toContain("configured with file 'ghost.so', which is in none of the plugin folders");
    const other = await refusal(session.load("other"));
    expect(other.code).toBe("E_CONFIG");
    expect(other.message).toContain("configures plugin 'other', but the sidecar");
  });
});
