/**
 * protocol/cortex-process.ts alone: a Cortex process plugin's manifest.toml read strictly (every
 * default, every refusal and the words naming it), the paths that leave the plugin's folder, and
 * a tool's gating from its effects. Written to kill its generated mutants (docs/mutants.md).
 */
import { expect, test } from "bun:test";
import { DEFAULT_MAX_OUTPUT, declaresProcessTools, gatingOf, isOutside, outsidePaths, type ProcessRead, readProcessManifest } from "../../src/protocol/cortex-process.ts";
import { CONTRACT_CURRENT } from "../../src/protocol/manifest.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const HEAD = 'name = "p"\nversion = "1.0"\n[native]\n';
const TOOL = '[[native.tools]]\nname = "t"\ndescription = "d"\ncommand = "run.sh"\n';
const read = (text: string) => readProcessManifest(bytes(text));
/** The problems' messages of a manifest that must be refused. */
const refused = (text: string): string[] => {
  const r = read(text);
  if (r.ok) throw new Error(`accepted: ${text}`);
  return r.problems.map((p) => `${p.path} | ${p.message}`);
};
const plugin = (r: ProcessRead) => {
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.plugin;
};

test("declaresProcessTools: a [native] table listing tools, and nothing else", () => {
  expect(declaresProcessTools(bytes(HEAD + TOOL))).toBe(true);
  expect(declaresProcessTools(bytes('[native]\ntools = []\n'))).toBe(true);
  expect(declaresProcessTools(bytes('[native]\nlibrary = "x.so"\n'))).toBe(false);
  expect(declaresProcessTools(bytes('native = [1]\n'))).toBe(false);
  expect(declaresProcessTools(bytes('native = "x"\n'))).toBe(false);
  expect(declaresProcessTools(bytes('native = { tools = "x" }\n'))).toBe(false);
  expect(declaresProcessTools(bytes('name = "p"\n'))).toBe(false);
  expect(declaresProcessTools(bytes("[native\n"))).toBe(false);
  expect(declaresProcessTools(new Uint8Array([0x5b, 0xff, 0x5d]))).toBe(false);
  // valid TOML but for a byte in a comment that is not UTF-8: not read, so not declared
  expect(declaresProcessTools(new Uint8Array([...bytes("[native]\ntools = []\n# "), 0xff, 0x0a]))).toBe(false);
});

test("the defaults of a tool and of the plugin", () => {
  const p = plugin(read(HEAD + TOOL));
  expect(p).toMatchObject({ name: "p", version: "1.0", description: null, allowHostPaths: false });
  expect("sandbox" in p).toBe(false);
  expect(p.tools).toEqual([{ name: "t", description: "d", command: "run.sh", input_schema: { type: "object" }, args: [], inherit_env: ["PATH"], env: {}, max_output_bytes: DEFAULT_MAX_OUTPUT, effects: [] }]);
  expect(DEFAULT_MAX_OUTPUT).toBe(1048576);
  expect(p.manifest).toEqual({ pluginContract: CONTRACT_CURRENT, name: "p", version: "1.0", instructions: null, spawns: true, client: false, tools: [{ name: "t", description: "d", inputSchema: { type: "object" }, gated: false, alwaysAskable: true }], commands: [] });
  expect("sandbox" in p.manifest).toBe(false);
});

test("what is given is kept: description, allow_host_paths, the sandbox, a tool's every key", () => {
  const text = 'name = "p"\nversion = "1.0"\ndescription = "about"\n[native]\nisolation = "process"\nallow_host_paths = true\n' +
    '[[native.tools]]\nname = "t-1_X"\ndescription = "d"\ncommand = "/bin/sh"\nargs = ["a", "b"]\nworking_dir = "/tmp"\ninherit_env = ["HOME", "LANG"]\nenv = { A = "1" }\n' +
    'timeout_secs = 2147483\nmax_output_bytes = 1\nmax_memory_bytes = 4096\nmax_cpu_secs = 1\ninput_schema = { type = "object", properties = {} }\neffects = [{ kind = "write_file", confirmation = "on_risk" }]\n' +
    '[cxagent.sandbox]\nnet = "none"\n';
  const p = plugin(read(text));
  expect(p).toMatchObject({ description: "about", allowHostPaths: true, sandbox: { net: "none", fs: { read: [], write: [] } } });
  expect(p.manifest).toMatchObject({ sandbox: { net: "none" }, tools: [{ name: "t-1_X", inputSchema: { type: "object", properties: {} }, gated: true, alwaysAskable: true }] });
  expect(p.tools[0]).toEqual({ name: "t-1_X", description: "d", command: "/bin/sh", args: ["a", "b"], working_dir: "/tmp", inherit_env: ["HOME", "LANG"], env: { A: "1" }, timeout_secs: 2147483, max_output_bytes: 1, max_memory_bytes: 4096, max_cpu_secs: 1, input_schema: { type: "object", properties: {} }, effects: [{ kind: "write_file", confirmation: "on_risk" }] });
  expect(plugin(read(HEAD + TOOL + 'effects = [{ kind = "read" }]\n')).tools[0]!.effects).toEqual([{ kind: "read", confirmation: "never" }]);
});

test("not UTF-8, not TOML: refused, naming which and where", () => {
  expect(readProcessManifest(new Uint8Array([0x6e, 0xff]))).toEqual({ ok: false, problems: [{ path: "", message: "it is not UTF-8 text" }] });
  const toml = refused('name = "p"\nversion = \n');
  expect(toml).toHaveLength(1);
  expect(toml).toEqual([" | it is not valid TOML (line 2, column 11: invalid value)"]);
});

test("a key missing is named as required; a key of the wrong kind, by its path and the schema's words", () => {
  expect(refused('version = "1"\n[native]\n' + TOOL)).toEqual(["name | name is required"]);
  expect(refused('name = "p"\nversion = "1"\n')).toEqual(["native | native is required"]);
  expect(refused(HEAD + '[[native.tools]]\nname = "t"\ndescription = "d"\n')).toEqual(["native.tools[0].command | native.tools[0].command is required"]);
  expect(refused(HEAD + 'tools = []\n')).toEqual(["native.tools | native.tools: must list at least one tool"]);
  expect(refused('name = "p"\nversion = " "\n[native]\n' + TOOL)).toEqual(["version | version: must not be blank"]);
  expect(refused('name = "-p"\nversion = "1"\n[native]\n' + TOOL)[0]).toBe('name | name: the string "-p" is not a plugin name cxagent can use (1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit)');
  expect(refused('name = "p"\nversion = "1"\n[native]\nisolation = "shared"\n' + TOOL)).toEqual(['native.isolation | native.isolation: must be "process" for a plugin of [[native.tools]], not the string "shared"']);
});

test("a tool's keys, each refused with what is wrong", () => {
  const tool = (extra: string, base = TOOL) => refused(HEAD + base + extra);
  expect(tool("", '[[native.tools]]\nname = "a b"\ndescription = "d"\ncommand = "x"\n')).toEqual(['native.tools[0].name | native.tools[0].name: the string "a b" is not a tool name (1-64 of A-Z a-z 0-9 _ -)']);
  expect(tool("", `[[native.tools]]\nname = "${"a".repeat(65)}"\ndescription = "d"\ncommand = "x"\n`)[0]).toContain("is not a tool name");
  expect(read(HEAD + `[[native.tools]]\nname = "${"a".repeat(64)}"\ndescription = "d"\ncommand = "x"\n`).ok).toBe(true);
  for (const name of ["", "ab.", "x!", "!x"]) expect(tool("", `[[native.tools]]\nname = "${name}"\ndescription = "d"\ncommand = "x"\n`)[0]).toContain("is not a tool name");
  expect(tool("", '[[native.tools]]\nname = "t"\ndescription = "\t"\ncommand = "x"\n')).toEqual(["native.tools[0].description | native.tools[0].description: must not be blank"]);
  expect(tool('working_dir = ""\n')).toEqual(["native.tools[0].working_dir | native.tools[0].working_dir: must not be blank"]);
  expect(tool("input_schema = [1]\n")).toEqual(["native.tools[0].input_schema | native.tools[0].input_schema: must be a JSON Schema table"]);
  expect(tool('input_schema = "object"\n')[0]).toContain("must be a JSON Schema table");
  expect(tool('inherit_env = ["A=B"]\n')).toEqual(["native.tools[0].inherit_env[0] | native.tools[0].inherit_env[0]: must be a variable's name"]);
  expect(tool('inherit_env = [""]\n')[0]).toContain("must be a variable's name");
  expect(tool('inherit_env = ["=A"]\n')[0]).toContain("must be a variable's name");
  expect(tool('env = { "A=B" = "1" }\n')[0]).toBe("native.tools[0].env[\"A=B\"] | native.tools[0].env[\"A=B\"]: must be a variable's name");
  expect(tool('env = { "B=" = "1" }\n')[0]).toContain("must be a variable's name");
  expect(tool("timeout_secs = 0\n")).toEqual(["native.tools[0].timeout_secs | native.tools[0].timeout_secs: must be at least 1 second"]);
  expect(tool("timeout_secs = 1.5\n")).toEqual(["native.tools[0].timeout_secs | native.tools[0].timeout_secs: must be a whole number of seconds"]);
  expect(tool("timeout_secs = 2147484\n")).toEqual(["native.tools[0].timeout_secs | native.tools[0].timeout_secs: must be at most 2147483 seconds"]);
  expect(tool("max_output_bytes = 0\n")).toEqual(["native.tools[0].max_output_bytes | native.tools[0].max_output_bytes: must be at least 1 byte"]);
  expect(tool("max_memory_bytes = 2.5\n")).toEqual(["native.tools[0].max_memory_bytes | native.tools[0].max_memory_bytes: must be a whole number of bytes"]);
  expect(tool("max_cpu_secs = -1\n")).toEqual(["native.tools[0].max_cpu_secs | native.tools[0].max_cpu_secs: must be at least 1 second"]);
  expect(tool('effects = [{ kind = "x", confirmation = "maybe" }]\n')).toEqual(['native.tools[0].effects[0].confirmation | native.tools[0].effects[0].confirmation: must be "never", "on_risk" or "always", not "maybe"']);
  // an integer past what a number holds exactly is kept as a bigint, and so refused, not rounded
  expect(tool("max_memory_bytes = 9007199254740993\n")[0]).toMatch(/^native\.tools\[0\]\.max_memory_bytes \| /);
});

test("a command or working folder outside the plugin's folder: refused, each named, unless allow_host_paths", () => {
  const outside = HEAD + '[[native.tools]]\nname = "t"\ndescription = "d"\ncommand = "../x.sh"\nworking_dir = "/srv"\n[[native.tools]]\nname = "u"\ndescription = "d"\ncommand = "in.sh"\nworking_dir = "sub/.."\n';
  expect(refused(outside)).toEqual([
    `native.tools[0].command | native.tools[0].command: "../x.sh" is outside the plugin's folder; set [native] allow_host_paths = true to allow it (the trust prompt then names it)`,
    `native.tools[0].working_dir | native.tools[0].working_dir: "/srv" is outside the plugin's folder; set [native] allow_host_paths = true to allow it (the trust prompt then names it)`,
  ]);
  const allowed = plugin(read(outside.replace("[native]\n", "[native]\nallow_host_paths = true\n")));
  expect(outsidePaths(allowed)).toEqual([{ tool: "t", path: "../x.sh" }, { tool: "t", path: "/srv" }]);
  expect(outsidePaths(plugin(read(HEAD + TOOL)))).toEqual([]);
});

test("isOutside: absolute, or up through '..' after normalizing; a name that starts with '..' is inside", () => {
  for (const p of ["/bin/sh", "..", "../x", "a/../../x", "./../x", "..\\x", "a\\..\\..\\x", "../"]) expect([p, isOutside(p)]).toEqual([p, true]);
  for (const p of ["x", "./x", "a/../x", "..x", "...", "x/..", "a/..b", "."]) expect([p, isOutside(p)]).toEqual([p, false]);
});

test("gatingOf: on_risk or always ask; always never offers Always", () => {
  const g = (...c: ("never" | "on_risk" | "always")[]) => gatingOf({ effects: c.map((confirmation) => ({ kind: "k", confirmation })) });
  expect(g()).toEqual({ gated: false, alwaysAskable: true });
  expect(g("never")).toEqual({ gated: false, alwaysAskable: true });
  expect(g("never", "on_risk")).toEqual({ gated: true, alwaysAskable: true });
  expect(g("always")).toEqual({ gated: true, alwaysAskable: false });
  expect(g("on_risk", "always")).toEqual({ gated: true, alwaysAskable: false });
});
