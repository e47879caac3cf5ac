/**
 * Cortex native plugins (cortex_plugin_init) through the library: recognized before any code
 * runs, refused at the handshake for every way the table can be wrong, their manifest made from
 * plugin_info and the descriptors, gated by their declared effects, called concurrently, and
 * every buffer they return freed exactly once, with its cap, on every path. The fixture is the
 * project's own C (test/fixtures/cortex/cortex-basic.c), written against the ABI alone.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { Connection } from "../../src/host/connection.ts";
import { hostCommand } from "../../src/session/host-command.ts";
import { pluginHostEnv } from "../../src/session/host-env.ts";
import { fixture, fixtureLibrary, freeCounts, openSession, refusal, tempDir, until, within } from "../helpers.ts";

const BASIC = fixture("cortex-basic");
const TOOLS = ["echo", "invocation", "fail", "media", "no_media", "wait", "slow", "malformed", "work", "peek", "write_note", "quiet"];

/** A folder holding the fixture's library as `file`, with a manifest.toml when one is given. */
function packaged(dir: string, options: { manifest?: string; file?: string; manifestAt?: string } = {}): string {
  const file = options.file ?? "cortex-basic.so";
  const library = join(dir, file);
  mkdirSync(join(library, ".."), { recursive: true });
  copyFileSync(fixtureLibrary("cortex-basic"), library);
  if (options.manifest !== undefined) writeFileSync(join(dir, options.manifestAt ?? "manifest.toml"), options.manifest);
  return dir;
}

describe("recognized before any code runs", () => {
  test("a library exporting cortex_plugin_init and no cxagent_plugin_* is a Cortex plugin, named after its file", async () => {
    await using session = await openSession();
    const inspected = session.inspect(BASIC);
    expect(inspected.kind).toBe("cortex");
    expect(inspected.name).toBe("cortex-basic");
    expect(inspected.manifest.tools).toEqual([]);
    expect(inspected.cortex).toEqual({ manifest: null, description: null, versionDeclared: false });
    expect(session.inspect(fixture("echo")).kind).toBe("native");
  });

  test("its manifest.toml gives name, version and description; the folder holding it is the load set", async () => {
    using dir = tempDir();
    const folder = packaged(join(dir.path, "pkg"), {
      file: "lib/libcortex_basic.so",
      manifest: 'name = "cortex-basic"\nversion = "2.1.0"\ndescription = "the fixture, packaged"\ncortex_version = "1.6.4"\ntrust = "trusted_native"\n\n[capabilities]\nprovides = ["tools"]\n\n[native]\nlibrary = "lib/libcortex_basic.so"\nisolation = "trusted_in_process"\nabi_version = 1\n',
    });
    await using session = await openSession();
    // by its folder, by its manifest.toml, and by its library (the manifest is one folder up)
    for (const ref of [folder, join(folder, "manifest.toml"), join(folder, "lib/libcortex_basic.so")]) {
      const inspected = session.inspect(ref);
      expect(inspected).toMatchObject({ kind: "cortex", name: "cortex-basic", manifest: { version: "2.1.0" }, cortex: { manifest: join(folder, "manifest.toml"), description: "the fixture, packaged" } });
      expect(inspected.loadSet.files.map((f) => f.path)).toEqual(["lib/libcortex_basic.so", "manifest.toml"]);
    }
    const plugin = await session.load(folder);
    expect(plugin.tools.map((t) => t.name)).toEqual(TOOLS);
  });

  test.each([
    ["not TOML", 'name = "x"\nversion = 1.0.0\n', "is not valid TOML (line 2, column"],
    ["a name cxagent cannot use", 'name = "two words"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\n', 'name: the string "two words" is not a plugin name'],
    ["no version", 'name = "cortex-basic"\n[native]\nlibrary = "cortex-basic.so"\n', "version is required"],
    ["a process-isolated plugin", 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\nisolation = "process"\n', 'isolation is "process": a process-isolated Cortex plugin'],
    ["another ABI", 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\nabi_version = 2\n', "abi_version is 2; cxagent loads Cortex native ABI 1"],
    ["a library outside its folder", 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "../elsewhere.so"\n', 'library "../elsewhere.so" is outside the plugin\'s folder'],
    ["another library", 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "other.so"\n', "names the library other.so, not cortex-basic.so"],
  ])("an invalid manifest.toml is refused by its path: %s", async (_what, manifest, says) => {
    using dir = tempDir();
    const folder = packaged(join(dir.path, "pkg"), { manifest });
    await using session = await openSession();
    const error = await refusal(Promise.resolve().then(() => session.inspect(join(folder, "cortex-basic.so"))));
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain(join(folder, "manifest.toml"));
    expect(error.message).toContain(says);
  });

  test("found by discovery through its manifest.toml, and through config.json's file", async () => {
    using dir = tempDir();
    packaged(join(dir.path, "plugins", "basic"), { manifest: 'name = "cortex-basic"\nversion = "1.0.0"\n[native]\nlibrary = "cortex-basic.so"\n' });
    const configDir = join(dir.path, "config");
    mkdirSync(configDir);
    writeFileSync(join(configDir, "config.json"), JSON.stringify({ pluginPaths: [join(dir.path, "plugins")] }));
    {
      await using session = await openSession({ configDir });
      expect(session.available().map((p) => p.name)).toContain("cortex-basic");
      const plugin = await session.load("cortex-basic");
      expect((await plugin.invoke("echo", { found: "by name" })).output.content).toBe('{"found":"by name"}');
    }
    writeFileSync(join(configDir, "config.json"), JSON.stringify({ pluginPaths: [join(dir.path, "plugins")], plugins: { "cortex-basic": { file: "cortex-basic.so" } } }));
    await using session = await openSession({ configDir });
    expect(session.inspect("cortex-basic")).toMatchObject({ kind: "cortex", location: { how: "config", cortexManifest: join(dir.path, "plugins", "basic", "manifest.toml") } });
  });
});

describe("the handshake", () => {
  test.each([
    ["status:-1", "cortex_plugin_init returned -1, which the Cortex SDK returns for a NULL argument"],
    ["status:-2", "cortex_plugin_init returned -2: the plugin does not speak Cortex native ABI 1"],
    ["status:7", "cortex_plugin_init returned status 7, not 0"],
    ["abi:2", "the table cortex_plugin_init filled says abi_version 2; this host speaks Cortex native ABI 1"],
    ["null_plugin", "cortex_plugin_init returned a NULL plugin state"],
    ["null:tool_execute", "the table cortex_plugin_init filled is missing tool_execute (NULL)"],
    ["null:plugin_info,buffer_free", "is missing plugin_info, buffer_free (NULL)"],
    ["info:empty", "plugin_info returned an empty buffer"],
    ["info:invalid", "plugin_info is invalid:\n  - version: Invalid type: Expected string but received 1\n  - description is required"],
    ["info:not_json", "plugin_info is invalid:\n  - it is not valid JSON"],
    ["info:bad_utf8", "plugin_info returned bytes that are not UTF-8"],
    ["descriptor:2:empty", "tool_descriptor(2) returned an empty buffer"],
    ["descriptor:3:invalid", "tool_descriptor(3) is invalid:\n  - input_schema is required"],
    ["descriptor:0:bad_confirmation", 'tool_descriptor(0) is invalid:\n  - capabilities.effects[0].confirmation: must be "never", "on_risk" or "always", not "sometimes"'],
    ["count:huge", "tool_count returned 18446744073709551615, more than the 4096 tools this host reads"],
  ])("%s is refused as a handshake failure naming the cause", async (setting, says) => {
    await using session = await openSession({ env: { CXAGENT_FX_CORTEX: setting } });
    const error = await refusal(session.load(BASIC));
    expect(error.code).toBe("E_HANDSHAKE");
    expect(error.message).toContain("plugin 'cortex-basic' was refused: handshake refused: ");
    expect(error.message).toContain(says);
  });

  test.each([
    ["info:bad_name", 'name: the string "cortex basic" is not a plugin name'],
    ["tool:two words", 'tools[0].name: the string "two words" is not a tool name (1-64 of A-Z a-z 0-9 _ -) (tool \'two words\')'],
    ["duplicate", "tool 'echo' is declared more than once"],
  ])("the manifest made from it is validated like any other: %s", async (setting, says) => {
    await using session = await openSession({ env: { CXAGENT_FX_CORTEX: setting } });
    const error = await refusal(session.load(BASIC));
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain("the manifest made from plugin_info and the tool descriptors has 1 problem");
    expect(error.message).toContain(says);
  });

  test("its tool names are claimed like any plugin's: a built-in's name, or another plugin's, refuses it", async () => {
    {
      await using session = await openSession({ env: { CXAGENT_FX_CORTEX: "tool:read_file" } });
      const error = await refusal(session.load(BASIC));
      expect(error.code).toBe("E_COLLISION");
      expect(error.message).toBe("plugin 'cortex-basic' was refused: its tool 'read_file' is a built-in tool's name");
    }
    using dir = tempDir();
    const twin = packaged(join(dir.path, "twin"), { file: "twin.so" });
    await using session = await openSession();
    await session.load(BASIC);
    const error = await refusal(session.load(twin));
    expect(error.code).toBe("E_COLLISION");
    expect(error.message).toBe("plugin 'twin' was refused: its tool 'echo' is already held by plugin 'cortex-basic'");
  });

  test("with a manifest.toml, its name is the plugin's: a plugin_info naming it otherwise loads, with a warning (the Cortex SDK's quick start ships so)", async () => {
    using dir = tempDir();
    // The quick start's shape: plugin_info says one name ('cortex-basic'), manifest.toml another.
    const folder = packaged(join(dir.path, "pkg"), { manifest: 'name = "basic"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\n' });
    await using session = await openSession();
    const plugin = await session.load(folder);
    expect(plugin.name).toBe("basic");
    expect(plugin.manifest.name).toBe("basic");
    expect(plugin.warnings).toEqual([
      `plugin_info names it 'cortex-basic', but its manifest ${join(folder, "manifest.toml")} names it 'basic': cxagent uses the manifest's name (approval, config, the CLI); make PluginInfo's name 'basic' to silence this`,
    ]);
    const result = await plugin.invoke("echo", { hi: 1 });
    expect(result.success).toBe(true);
    // The same names: no warning.
    using same = tempDir();
    const agreeing = packaged(join(same.path, "pkg"), { manifest: 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\n' });
    await using other = await openSession();
    expect((await other.load(agreeing)).warnings).toEqual([]);
  });

  test("without one, it is served under its file's name whatever plugin_info says", async () => {
    using dir = tempDir();
    const folder = packaged(join(dir.path, "pkg"), { file: "libother_name.so" });
    await using session = await openSession();
    const plugin = await session.load(folder);
    expect(plugin.name).toBe("other_name");
    expect(plugin.manifest.name).toBe("other_name");
    expect(plugin.manifest.version).toBe("1.0.0");
    expect(plugin.about).toBe("The Cortex ABI test fixture");
  });
});

describe("the manifest and its gating", () => {
  test("each tool as its descriptor says; effects that need confirmation gate it, never less than Cortex would", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    expect(plugin.kind).toBe("cortex");
    expect(plugin.manifest).toMatchObject({ name: "cortex-basic", version: "1.0.0", instructions: null, spawns: false, client: false, commands: [] });
    expect(plugin.tools.map((t) => t.name)).toEqual(TOOLS);
    const tool = (name: string) => plugin.tools.find((t) => t.name === name)!;
    expect(tool("echo")).toEqual({ name: "echo", description: "Returns its input JSON as its output.", inputSchema: { type: "object" }, gated: false, alwaysAskable: true });
    expect(tool("wait").inputSchema).toEqual({ type: "object", properties: { n: { type: "integer" } } });
    expect(tool("peek")).toMatchObject({ gated: true, alwaysAskable: true }); // on_risk
    expect(tool("write_note")).toMatchObject({ gated: true, alwaysAskable: false }); // always
    expect(tool("quiet")).toMatchObject({ gated: false }); // never
    // a gated tool goes through permission: denied by policy when nobody can be asked
    const denied = await plugin.invoke("write_note", {});
    expect(denied).toMatchObject({ success: false, permissionDenied: true, decidedBy: "policy" });
    expect((await plugin.gate("write_note")).alwaysOffered).toBe(false);
    expect((await plugin.gate("peek")).alwaysOffered).toBe(true);
    expect((await plugin.invoke("peek", {}, { permission: "once" })).success).toBe(true);
  });

  test("timeout_secs is the tool's default deadline, which a call's own deadline replaces", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    expect(plugin.deadlineOf("slow")).toBe(1000);
    expect(plugin.deadlineOf("echo")).toBe(null);
    const late = await refusal(plugin.invoke("slow", { ms: 5000 }));
    expect(late.code).toBe("E_TIMEOUT");
    expect(late.message).toContain("tool_execute of slow did not answer within 1000 ms");
    expect(late.message).toContain("(the default deadline plugin 'cortex-basic' declares for slow: timeout_secs 1)");
    expect((await plugin.invoke("slow", { ms: 1200 }, { timeoutMs: 20_000 })).output.content).toBe("slept");
  });
});

describe("calls", () => {
  test("arguments go as input_json; invocation_json carries the tool, the session, source and scope", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    const echoed = await plugin.invoke("echo", { text: "héllo \"quoted\"", n: [1, 2] });
    expect(JSON.parse(echoed.output.content as string)).toEqual({ text: "héllo \"quoted\"", n: [1, 2] });
    const invocation = JSON.parse((await plugin.invoke("invocation")).output.content as string);
    expect(invocation).toEqual({ tool_name: "invocation", session_id: session.id, actor: null, source: "library", execution_scope: "foreground" });
    // A session says who calls through it (the CLI says "cli", cxagent mcp "mcp": their own tests).
    await using other = await openSession({ source: "mcp" });
    const told = JSON.parse((await (await other.load(BASIC)).invoke("invocation")).output.content as string);
    expect(told).toEqual({ tool_name: "invocation", session_id: other.id, actor: null, source: "mcp", execution_scope: "foreground" });
  });

  test("a ToolResult maps to a JobResult: success is !is_error, output.content and output.media, errorMessage when is_error", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    expect(await plugin.invoke("fail")).toMatchObject({ success: false, errorMessage: "it failed on purpose", permissionDenied: false, output: { content: "it failed on purpose", media: [] } });
    expect(await plugin.invoke("media")).toMatchObject({
      success: true,
      errorMessage: null,
      output: { content: "a picture", media: [{ media_type: "image", mime_type: "image/png", url: "/tmp/dot.png", caption: "a dot", size: 67 }] },
    });
    expect((await plugin.invoke("no_media")).output).toEqual({ content: "no media here", media: [] });
    expect((await plugin.invoke("malformed", { how: "lines" })).output.content).toBe("on\nlines");
    expect((await plugin.invoke("malformed", { how: "bad_utf8" })).output.content).toBe("bad \ufffd bytes");
  });

  test.each([
    ["invalid_json", 'tool_execute returned invalid JSON (an unexpected end at byte 16): {"output": "x", '],
    ["not_object", 'tool_execute returned an array where a ToolResult object belongs: ["output"]'],
    ["no_output", 'tool_execute returned a ToolResult without "output": {"media":[],"is_error":false}'],
    ["output_number", 'tool_execute returned a ToolResult whose "output" is not a string: {"output":42,"media":[],"is_error":false}'],
    ["no_is_error", 'tool_execute returned a ToolResult without "is_error": {"output":"x","media":[]}'],
    ["media_object", 'tool_execute returned a ToolResult whose "media" is not an array: {"output":"x","media":{},"is_error":false}'],
    ["empty", "tool_execute returned an empty buffer, not a ToolResult"],
    ["nul", 'tool_execute returned invalid JSON (a control character inside a string at byte 12): {"output":"a\u0000b","media":[],"is_error":false}'],
  ])("a result that is not a ToolResult is a bad reply, with a bounded preview: %s", async (how, says) => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    const error = await refusal(plugin.invoke("malformed", { how }));
    expect(error.code).toBe("E_BAD_REPLY");
    expect(error.message).toBe(`plugin 'cortex-basic': ${says}`);
    expect((await plugin.invoke("echo", { after: how })).success).toBe(true); // the plugin goes on
  });

  test("a buffer whose len is its cap is read; one whose len is cap + 1 is a bad reply, read not at all, and freed as it came", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    await using session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log } });
    const plugin = await session.load(BASIC);
    expect((await plugin.invoke("malformed", { how: "len_is_cap" })).output.content).toBe("full");
    const error = await refusal(plugin.invoke("malformed", { how: "len_over_cap" }));
    expect(error.code).toBe("E_BAD_REPLY");
    expect(error.message).toBe("plugin 'cortex-basic': tool_execute returned a buffer whose len is larger than its cap, not a ToolResult");
    expect((await plugin.invoke("echo", { after: "over" })).success).toBe(true); // the plugin goes on
    await plugin.stop();
    const counts = freeCounts(log); // the fixture aborts on a buffer freed with another len or cap
    expect(counts.freed).toBe(counts.returned);
  });

  test("a 40 MB output arrives whole; as an error, which a reply carries twice, it is a bad reply rather than a line over the cap", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    expect(((await plugin.invoke("malformed", { how: "huge" }, { timeoutMs: 30_000 })).output.content as string).length).toBe(40 << 20);
    const error = await refusal(plugin.invoke("malformed", { how: "huge_error" }, { timeoutMs: 30_000 }));
    expect(error.code).toBe("E_BAD_REPLY");
    expect(error.message).toBe("plugin 'cortex-basic': tool_execute returned a ToolResult too large for one protocol line");
  }, 60_000);

  test("calls run concurrently: four calls meet inside tool_execute at once", async () => {
    await using session = await openSession();
    const plugin = await session.load(BASIC);
    const results = await within(Promise.all([1, 2, 3, 4].map(() => plugin.invoke("wait", { n: 4 }))), 30_000, "four calls meeting");
    expect(results.map((r) => r.success)).toEqual([true, true, true, true]);
    expect(results.map((r) => r.output.content).sort()).toEqual(["arrival 1 of 4", "arrival 2 of 4", "arrival 3 of 4", "arrival 4 of 4"]);
  });

  test("a crash in tool_execute costs the call; the next one starts a fresh plugin host", async () => {
    using dir = tempDir();
    await using session = await openSession({ env: { CXAGENT_FX_FAULT: "execute:segfault", CXAGENT_FX_FAULT_ONCE: join(dir.path, "once") } });
    const plugin = await session.load(BASIC);
    const crashed = await refusal(plugin.invoke("work"));
    expect(crashed.code).toBe("E_CRASHED");
    expect(crashed.message).toContain("plugin 'cortex-basic' crashed (signal SIGSEGV) while tool_execute of work was running");
    expect((await plugin.invoke("work")).output.content).toBe("fine");
  });
});

describe("buffers", () => {
  test("every returned buffer is freed once with its cap: describe + good calls + malformed calls + stop", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    const session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log } });
    const plugin = await session.load(BASIC);
    const good = [plugin.invoke("echo", { i: 1 }), plugin.invoke("fail"), plugin.invoke("media"), plugin.invoke("no_media"), plugin.invoke("invocation")];
    const malformed = ["invalid_json", "not_object", "no_output", "empty", "nul", "bad_utf8", "lines"].map((how) => plugin.invoke("malformed", { how }).catch((e: unknown) => e));
    const settled = await Promise.all([...good, ...malformed]);
    expect(settled.filter((s) => s instanceof CxError).length).toBe(5);
    await session.close();
    // plugin_info, one descriptor per tool, and one result per call; plugin_drop once, at stop
    expect(freeCounts(log)).toEqual({ returned: 1 + TOOLS.length + good.length + malformed.length, freed: 1 + TOOLS.length + good.length + malformed.length, drops: 1 });
  });

  test("an abandoned call's buffer is freed when it returns, and stop does not drop the plugin under it", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    const logs: string[] = [];
    const session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log }, onLog: (_p, _l, text) => logs.push(text) });
    const plugin = await session.load(BASIC);
    const abandoned = await refusal(plugin.invoke("slow", { ms: 300 }, { timeoutMs: 50 }));
    expect(abandoned.code).toBe("E_TIMEOUT");
    // the abandoned call runs on in the plugin; what it returns is still copied and freed
    // (its free is logged just after its return: wait for both, or this reads between the two)
    const settled = () => freeCounts(log).returned === 1 + TOOLS.length + 1 && freeCounts(log).freed === freeCounts(log).returned;
    await until(settled, 10_000, "the abandoned call to return and its buffer to be freed");
    expect(freeCounts(log)).toEqual({ returned: 1 + TOOLS.length + 1, freed: 1 + TOOLS.length + 1, drops: 0 });
    const stuck = plugin.invoke("slow", { ms: 60_000 }, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(await stuck).toBeInstanceOf(CxError);
    await session.close();
    expect(logs.some((l) => l.startsWith("plugin_drop waits: 1 call is still inside tool_execute"))).toBe(true);
    expect(freeCounts(log).drops).toBe(0);
  });
});

describe("the plugin host's own answers", () => {
  test("plugin_drop runs exactly once, even when stop is asked twice; a call after stop is refused, not run", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    const { connection } = await Connection.spawn({
      hostCommand: hostCommand(),
      library: fixtureLibrary("cortex-basic"),
      kind: "cortex",
      label: "cortex-basic",
      cwd: dir.path,
      env: pluginHostEnv(process.env, { CXAGENT_FX_FREE_LOG: log }),
    });
    try {
      expect(await connection.request({ kind: "stop" })).toMatchObject({ ok: true });
      expect(await connection.request({ kind: "stop" })).toMatchObject({ ok: true });
      expect(await connection.request({ kind: "invoke", tool: "echo", arguments: {} })).toEqual({
        id: expect.any(Number),
        ok: false,
        error: "the plugin was stopped before tool_execute could run this call",
      });
      expect(freeCounts(log)).toEqual({ returned: 1 + TOOLS.length, freed: 1 + TOOLS.length, drops: 1 });
    } finally {
      await connection.shutdown({ sendStop: false });
    }
  });
});
