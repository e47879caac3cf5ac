/**
 * Tool selection as pure functions: the pattern dialect, the rules of the user's config.json, the
 * project's config (which can only narrow), how layers combine, instructions, and a forced ask.
 */
import { describe, expect, test } from "bun:test";
import { parseConfig } from "../../src/discovery/config.ts";
import { isToolPattern, matchesTool } from "../../src/discovery/globs.ts";
import { parseProjectConfig } from "../../src/discovery/project-config.ts";
import { decide } from "../../src/host/gate.ts";
import { composeInstructions } from "../../src/session/instructions.ts";
import { checkToolChoice, configSelection, contextCost, COST_ESTIMATE, disabledBy, LOAD_OPTION, narrowSelection, SESSION_OPTION } from "../../src/session/selection.ts";
import { CxError } from "../../src/errors.ts";
import { checkManifest, type Manifest } from "../../src/protocol/manifest.ts";

const USER = "/home/u/.config/cxagent/config.json";
const PROJECT = "/work/p/.cxagent/config.json";

function manifest(tools: string[], instructions: string | null = "Use them."): Manifest {
  const checked = checkManifest({ pluginContract: 4, name: "fs", version: "1", instructions, tools: tools.map((name) => ({ name })) });
  if (!checked.ok) throw new Error("bad test manifest");
  return checked.manifest;
}
const FS = manifest(["files_read", "files_write", "files_delete", "net_fetch"]);

const user = (entry: object) => parseConfig({ plugins: { fs: { file: "fs.so", ...entry } } }, USER);
const project = (raw: unknown, config = user({})) => parseProjectConfig(raw, PROJECT, { config, path: USER, gateMs: 500 });
const refusedPaths = (raw: unknown, config = user({})) => {
  try {
    project(raw, config);
  } catch (error) {
    expect(error).toBeInstanceOf(CxError);
    expect((error as CxError).code).toBe("E_CONFIG");
    expect((error as CxError).message).toContain("a project can narrow what your own config.json allows, never widen it");
    return ((error as CxError).details!.problems as { path: string }[]).map((p) => p.path);
  }
  throw new Error("the project config was accepted");
};

describe("the pattern dialect", () => {
  test.each([
    ["files_*", "files_read", true],
    ["files_*", "files_", true],
    ["files_*", "net_fetch", false],
    ["*_read", "files_read", true],
    ["files_?ead", "files_read", true],
    ["files_?ead", "files_rread", false],
    ["files", "files_read", false], // anchored: a whole name, not a prefix
    ["read", "files_read", false], // nor a part of one
    ["*", "anything", true],
    ["Files_*", "files_read", false], // case-sensitive
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "aXbY", false],
    ["**", "x", true],
  ])("%s against %s: %p", (pattern, name, expected) => {
    expect(matchesTool(pattern, name)).toBe(expected);
  });

  test("many stars against a long name that fails at the end: linear work, not exponential", () => {
    const pattern = "a*".repeat(40) + "b";
    expect(matchesTool(pattern, "a".repeat(64))).toBe(false);
  });

  test.each(["", "a.b", "a b", "[ab]", "a/b", "a\u001b", "x".repeat(129)])("%j is not a pattern", (p) => {
    expect(isToolPattern(p)).toBe(false);
  });
});

describe("tools in the user's config.json", () => {
  test("allow, deny and ask are read; a pattern outside the dialect is refused by path", () => {
    expect(user({ tools: { allow: ["files_*"], deny: ["files_delete"], ask: ["files_w*"] } }).plugins.get("fs")!.tools).toEqual({
      allow: ["files_*"],
      deny: ["files_delete"],
      ask: ["files_w*"],
    });
    expect(() => user({ tools: { deny: ["files.*"], only: ["x"] } })).toThrow(
      /plugins\.fs\.tools\.deny\[0\]: "files\.\*" is not a tool-name pattern[\s\S]*plugins\.fs\.tools declares 'only'/,
    );
    expect(() => user({ invokeTimeoutMs: 0 })).toThrow(/plugins\.fs\.invokeTimeoutMs: must be at least 1 ms/);
  });

  test("deny wins over allow; a tool no allow pattern matches is hidden; each names its rule", () => {
    const { policy } = configSelection(FS.tools, { name: "fs", userFile: USER, user: user({ tools: { allow: ["files_*"], deny: ["files_d*"] } }).plugins.get("fs"), project: null });
    expect([...policy.hidden]).toEqual([
      ["files_delete", { source: USER, rule: "plugins.fs.tools.deny[0]", pattern: "files_d*", kind: "deny" }],
      ["net_fetch", { source: USER, rule: "plugins.fs.tools.allow", pattern: null, kind: "allow" }],
    ]);
    expect(policy.unmatched).toEqual([]);
  });
});

describe("the project's config can only narrow", () => {
  test("it may disable a plugin, deny tools, make them ask and lower limits", () => {
    const config = user({ invokeTimeoutMs: 10_000 });
    const p = project({ plugins: { fs: { enabled: false, tools: { deny: ["net_*"], ask: ["files_read"] }, invokeTimeoutMs: 2_000, gateTimeoutMs: 100 } } }, config);
    expect(p.plugins.get("fs")).toEqual({ enabled: false, tools: { deny: ["net_*"], ask: ["files_read"] }, invokeTimeoutMs: 2_000, gateTimeoutMs: 100 });
    const { policy, limits } = configSelection(FS.tools, { name: "fs", userFile: USER, user: config.plugins.get("fs"), project: p });
    expect([...policy.hidden.keys()]).toEqual(["net_fetch"]);
    expect(policy.asked.get("files_read")).toEqual({ source: PROJECT, rule: "plugins.fs.tools.ask[0]", pattern: "files_read", kind: "ask" });
    expect(limits.invoke).toEqual({ ms: 2_000, by: { source: PROJECT, rule: "plugins.fs.invokeTimeoutMs", pattern: null, kind: "limit" } });
    expect(limits.gate!.ms).toBe(100);
  });

  test.each([
    ["enabling a plugin", { plugins: { fs: { enabled: true } } }, ["plugins.fs.enabled"]],
    ["allowing tools", { plugins: { fs: { tools: { allow: ["*"] } } } }, ["plugins.fs.tools.allow"]],
    ["adding search paths", { pluginPaths: ["/tmp/evil"] }, ["pluginPaths"]],
    ["supplying settings", { plugins: { fs: { settings: { token: "x" } } } }, ["plugins.fs.settings"]],
    ["naming the file", { plugins: { fs: { file: "evil.so" } } }, ["plugins.fs.file"]],
    ["pinning a folder", { plugins: { fs: { path: "/tmp/evil" } } }, ["plugins.fs.path"]],
    ["asking less", { plugins: { fs: { tools: { never: ["files_write"] } } } }, ["plugins.fs.tools.never"]],
    ["a manifest's gating", { plugins: { fs: { gated: false } } }, ["plugins.fs.gated"]],
    ["grants", { grants: [{ rule: "plugin fs tool files_write" }] }, ["grants"]],
    ["raising the invoke limit", { plugins: { fs: { invokeTimeoutMs: 60_001 } } }, ["plugins.fs.invokeTimeoutMs"]],
    ["raising the gate deadline past the default", { plugins: { fs: { gateTimeoutMs: 501 } } }, ["plugins.fs.gateTimeoutMs"]],
  ])("%s is refused by path", (_what, raw, paths) => {
    expect(refusedPaths(raw, user({ invokeTimeoutMs: 60_000 }))).toEqual(paths);
  });

  test("every problem at once, by path, with __proto__ an ordinary plugin name", () => {
    const raw = JSON.parse('{"pluginPaths": [], "plugins": {"__proto__": {"enabled": true, "tools": {"allow": ["*"], "deny": ["a.b"]}}, "fs": {"settings": 1}}}');
    expect(refusedPaths(raw)).toEqual(["pluginPaths", "plugins.__proto__.enabled", "plugins.__proto__.tools.deny[0]", "plugins.__proto__.tools.allow", "plugins.fs.settings"]);
    const fine = project(JSON.parse('{"plugins": {"__proto__": {"enabled": false}}}'));
    expect([...fine.plugins.keys()]).toEqual(["__proto__"]);
  });

  test("an unset user limit can be lowered from 'none'; the gate's from the default", () => {
    expect(project({ plugins: { fs: { invokeTimeoutMs: 1 } } }).plugins.get("fs")!.invokeTimeoutMs).toBe(1);
    expect(refusedPaths({ plugins: { fs: { gateTimeoutMs: 600 } } }, user({ gateTimeoutMs: 400 }))).toEqual(["plugins.fs.gateTimeoutMs"]);
  });
});

describe("layers only take away", () => {
  const base = () => configSelection(FS.tools, { name: "fs", userFile: USER, user: user({ tools: { deny: ["net_*", "nope_*"] } }).plugins.get("fs"), project: null });

  test("an option's allow narrows and never restores what config.json hid", () => {
    const { policy } = narrowSelection(FS.tools, base(), { session: { allow: ["files_*", "net_fetch"] }, load: { deny: ["files_write"], ask: ["files_read"] } });
    expect([...policy.hidden]).toEqual([
      ["files_write", { source: "load(ref, { tools })", rule: "tools.deny[0]", pattern: "files_write", kind: "deny" }],
      ["net_fetch", { source: USER, rule: "plugins.fs.tools.deny[0]", pattern: "net_*", kind: "deny" }],
    ]);
    expect([...policy.asked.keys()]).toEqual(["files_read"]);
  });

  test("patterns that match no tool are reported, except a session-wide option's", () => {
    const { policy } = narrowSelection(FS.tools, base(), { session: { deny: ["other_*"] }, load: { ask: ["files_red"] } });
    expect(policy.unmatched).toEqual([
      { source: USER, rule: "plugins.fs.tools.deny[1]", pattern: "nope_*", kind: "deny" },
      { source: "load(ref, { tools })", rule: "tools.ask[0]", pattern: "files_red", kind: "ask" },
    ]);
  });
});

describe("instructions", () => {
  const all = FS.tools;
  test("a plugin adds its text under its visible tools; none when all are hidden; as it is with no tools", () => {
    expect(composeInstructions([{ manifest: FS, tools: all.slice(0, 2) }])).toBe("## files_read, files_write\n\nUse them.\n");
    expect(composeInstructions([{ manifest: FS, tools: [] }])).toBe("");
    const toolless = manifest([], "Be brief.");
    expect(composeInstructions([{ manifest: toolless, tools: [] }])).toBe("## fs (no tools)\n\nBe brief.\n");
  });
});

describe("a forced ask", () => {
  const rule = { source: PROJECT, rule: "plugins.fs.tools.ask[0]", pattern: "files_*", kind: "ask" as const };
  test.each([
    ["a tool that never asks", false, null],
    ["a gated tool with a stored grant", true, null],
    ["a dynamic tool whose gate said no prompt", "dynamic", { kind: "null" } as const],
  ])("%s asks, offers no Always and no grant answers it", (_what, gated, answer) => {
    const tool = { name: "files_read", description: "", inputSchema: { type: "object" }, gated: gated as boolean | "dynamic", alwaysAskable: true };
    const d = decide("fs", tool, { path: "x" }, answer, () => true, rule);
    expect(d).toEqual({ ask: true, display: 'fs wants to run files_read with {"path":"x"}', alwaysOffered: false, rule: "plugin fs tool files_read", source: gated === "dynamic" ? "gate" : "manifest", granted: false, forcedBy: rule });
  });
});

test("a tool's context cost is its JSON's UTF-8 bytes ÷ 4, rounded up", () => {
  const tool = { name: "t", description: "é", inputSchema: { type: "object" }, gated: false as const, alwaysAskable: true };
  const bytes = Buffer.byteLength('{"name":"t","description":"é","inputSchema":{"type":"object"}}');
  expect(contextCost(tool)).toEqual({ bytes, tokens: Math.ceil(bytes / 4) });
});

describe("each rule names where it is written (mutants of session/selection.ts)", () => {
  const both = (u: object, p: object) => {
    const config = user(u);
    return configSelection(FS.tools, { name: "fs", userFile: USER, user: config.plugins.get("fs"), project: project({ plugins: { fs: p } }, config) });
  };

  test("the lower of the two limits wins, in either order; on a tie, the user's own", () => {
    expect(both({ invokeTimeoutMs: 1_000 }, { invokeTimeoutMs: 900 }).limits.invoke).toEqual({ ms: 900, by: { source: PROJECT, rule: "plugins.fs.invokeTimeoutMs", pattern: null, kind: "limit" } });
    expect(both({ invokeTimeoutMs: 1_000, gateTimeoutMs: 300 }, { invokeTimeoutMs: 1_000, gateTimeoutMs: 300 }).limits).toEqual({
      invoke: { ms: 1_000, by: { source: USER, rule: "plugins.fs.invokeTimeoutMs", pattern: null, kind: "limit" } },
      gate: { ms: 300, by: { source: USER, rule: "plugins.fs.gateTimeoutMs", pattern: null, kind: "limit" } },
    });
    expect(both({ invokeTimeoutMs: 1_000 }, {}).limits).toEqual({ invoke: { ms: 1_000, by: { source: USER, rule: "plugins.fs.invokeTimeoutMs", pattern: null, kind: "limit" } }, gate: null });
  });

  test("a project's pattern that matches no tool is reported, by its path in the project's file", () => {
    expect(both({}, { tools: { deny: ["gone_*"] } }).policy.unmatched).toEqual([{ source: PROJECT, rule: "plugins.fs.tools.deny[0]", pattern: "gone_*", kind: "deny" }]);
  });

  test("a session-wide option's rule is named by its path in the option", () => {
    const { policy } = narrowSelection(FS.tools, configSelection(FS.tools, { name: "fs", userFile: USER, user: undefined, project: null }), { session: { deny: ["net_*"] } });
    expect(policy.hidden.get("net_fetch")).toEqual({ source: "Session.open({ tools })", rule: "tools.deny[0]", pattern: "net_*", kind: "deny" });
  });

  test("a tools option: absent is no rule; a bad one is refused naming the option, the problem and the form", () => {
    expect(checkToolChoice(undefined, SESSION_OPTION)).toBeUndefined();
    expect(checkToolChoice({ deny: ["x"] }, LOAD_OPTION)).toEqual({ deny: ["x"] });
    let error: CxError | null = null;
    try {
      checkToolChoice({ deny: "x" }, SESSION_OPTION);
    } catch (e) {
      error = e as CxError;
    }
    expect(error?.code).toBe("E_INVALID_INPUT");
    expect(error?.message).toStartWith("the option Session.open({ tools }) is invalid:\n");
    expect(error?.message).toContain("tools.deny");
    expect(error?.hint).toBe("give tools as {allow?: [pattern], deny?: [pattern], ask?: [pattern]}; a pattern is a tool name with * and ? as wildcards");
  });

  test("enabled: false is named where it is written: the user's file, the project's, both, or neither", () => {
    const rules = (u: object, p: object | null) => {
      const config = user(u);
      return { name: "fs", userFile: USER, user: config.plugins.get("fs"), project: p === null ? null : project({ plugins: { fs: p } }, config) };
    };
    const at = { rule: "plugins.fs.enabled", pattern: null, kind: "enabled" as const };
    expect(disabledBy(rules({ enabled: false }, null))).toEqual({ user: { source: USER, ...at }, project: null });
    expect(disabledBy(rules({}, { enabled: false }))).toEqual({ user: null, project: { source: PROJECT, ...at } });
    expect(disabledBy(rules({ enabled: false }, { enabled: false }))).toEqual({ user: { source: USER, ...at }, project: { source: PROJECT, ...at } });
    expect(disabledBy(rules({ enabled: true }, {}))).toEqual({ user: null, project: null });
    expect(disabledBy(rules({}, null))).toEqual({ user: null, project: null });
  });

  test("the context cost says how it was estimated", () => {
    expect(COST_ESTIMATE).toBe("tokens ≈ UTF-8 bytes of {name, description, inputSchema} as JSON ÷ 4");
  });
});
