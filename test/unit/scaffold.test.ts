/**
 * `cxagent new` without the file system: the names derived from a plugin name, the templates it
 * renders, and the manifest it writes.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/errors.ts";
import { checkManifest } from "../../src/protocol/manifest.ts";
import { pluginNames, suggestName } from "../../src/scaffold/names.ts";
import { LANGUAGES, planProject } from "../../src/scaffold/new-plugin.ts";
import { render, TEMPLATES } from "../../src/scaffold/templates.ts";

const ROOT = join(import.meta.dir, "../..");

describe("names", () => {
  test.each([
    ["hello", "hello", "hello", "hello_greet"],
    ["word-count", "word_count", "word_count", "word_count_greet"],
    ["My.Tool-2", "my_tool_2", "my_tool_2", "my_tool_2_greet"],
    ["1up", "plugin_1up", "plugin_1up", "plugin_1up_greet"],
    ["test", "test", "test_plugin", "test_greet"],
    ["fn", "fn", "fn_plugin", "fn_greet"],
    ["constructor", "constructor", "constructor", "constructor_greet"],
  ])("%s: identifier %s, crate %s, tool %s", (name, ident, crate, tool) => {
    expect(pluginNames(name)).toEqual({ name, ident, crate, tool });
  });

  test("a 64-character name still gives a tool name of at most 64 characters", () => {
    const { tool } = pluginNames("a".repeat(64));
    expect(tool.length).toBe(64);
    expect(tool).toEndWith("_greet");
  });

  test.each(["", "my plugin", "a/b", "..", ".x", "-x", "_x", "x".repeat(65), "é", "a\nb", "__proto__"])("%p is refused as invalid input", (name) => {
    let error: unknown;
    try {
      pluginNames(name);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CxError);
    expect((error as CxError).code).toBe("E_INVALID_INPUT");
    expect((error as CxError).message).toContain(JSON.stringify(name));
  });

  test.each([
    ["my plugin", "my-plugin"],
    ["a/b", "a-b"],
    ["--x--", "x"],
    ["..", null],
    ["é", null],
  ])("suggests %p → %p", (input, suggestion) => {
    expect(suggestName(input)).toBe(suggestion);
  });
});

describe("templates", () => {
  test("a placeholder with no value is an error, not an empty string", () => {
    expect(() => render("a @@nope@@ b", { name: "x" })).toThrow("@@nope@@");
    expect(render("@@name@@/@@name@@", { name: "x" })).toBe("x/x");
  });

  test.each(LANGUAGES.flatMap((language) => ["hello", "My.Tool-2", "1up", "a".repeat(64)].map((name) => [language, name] as const)))(
    "%s, %s: every file rendered, no placeholder left, the sidecar a valid manifest",
    (language, name) => {
      const project = planProject(name, language);
      expect(project.files.map((f) => f.path)).toContain(`plugin/${name}.plugin.json`);
      for (const file of project.files) {
        expect(file.path).not.toContain("@@");
        expect(file.text).not.toContain("@@");
      }
      const sidecar = project.files.find((f) => f.path === project.sidecar)!;
      const checked = checkManifest(JSON.parse(sidecar.text));
      expect(checked.ok).toBe(true);
      if (!checked.ok) return;
      expect(checked.manifest.name).toBe(name);
      expect(checked.manifest.tools.map((t) => t.name)).toEqual([pluginNames(name).tool]);
      expect(checked.manifest.tools[0]!.inputSchema).toMatchObject({ type: "object", required: ["name"] });
      expect(checked.manifest.tools[0]!.description.length).toBeGreaterThan(20);
    },
  );

  test("the Rust template's JSON module is the Rust example's, byte for byte", () => {
    const template = TEMPLATES.rust.find((f) => f.path === "src/json.rs")!.template;
    expect(template).toBe(readFileSync(join(ROOT, "examples/wordcount/src/json.rs"), "utf8"));
  });

  test("there is one JSON module for Rust, the template's: every example's json.rs is it, byte for byte", () => {
    const template = TEMPLATES.rust.find((f) => f.path === "src/json.rs")!.template;
    const copies = readdirSync(join(ROOT, "examples")).map((e) => join(ROOT, "examples", e, "src/json.rs")).filter((p) => existsSync(p));
    expect(copies.length).toBeGreaterThanOrEqual(2);
    for (const copy of copies) expect([copy, readFileSync(copy, "utf8")]).toEqual([copy, template]);
  });

  test("every native project carries this cxagent's header; a module project has none to carry", () => {
    expect(planProject("x", "ts").files.some((f) => f.path === "cxagent_plugin.h")).toBe(false);
    for (const language of ["c", "rust"] as const) {
      const header = planProject("x", language).files.find((f) => f.path === "cxagent_plugin.h")!;
      expect(header.text).toBe(readFileSync(join(ROOT, "ffi/cxagent_plugin.h"), "utf8"));
    }
  });
});
