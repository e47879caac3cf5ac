/**
 * `cxagent check` as a plugin author runs it: the report in text and as one JSON document, exit 0
 * or 5, trust asked on a real terminal or pinned with --hash, and nothing recorded in the user's
 * own state folder.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHECKS } from "../../src/check/run.ts";
import { cli, fixture, tempDir, tty, writeModule } from "../helpers.ts";

const hashOf = async (plugin: string) => (await cli(["describe", plugin, "--json"])).json().hash as string;

describe("cxagent check", () => {
  test("--json: one report naming every check, each with what was seen; exit 0 when nothing fails", async () => {
    using state = tempDir();
    const plugin = fixture("passes-check");
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--json", "--state-dir", state.path]);
    expect(r.code).toBe(0);
    const report = r.json();
    expect(report).toMatchObject({ plugin: "passes-check", version: "1.0.0", kind: "native", ok: true, counts: { fail: 0, skip: 3 }, ended: [] });
    expect(report.checks.map((c: { id: string }) => c.id)).toEqual(CHECKS.map((c) => c.id));
    // Every check passes; the gate's speed is the machine's too, so a loaded one may only warn.
    expect(report.checks.filter((c: { id: string; status: string }) => c.status !== "pass" && c.status !== "skip" && !(c.id === "gate-speed" && c.status === "warn"))).toEqual([]);
    for (const c of report.checks) expect(Object.keys(c).sort()).toEqual(["fix", "id", "seen", "status", "title"]);
    // What check approved went to a state folder of its own, not the user's.
    expect(readdirSync(state.path)).toEqual([]);
  }, 60_000);

  test("text: a line per check, the failure with its fix, a count; exit 5 when one fails", async () => {
    const plugin = fixture("free-does-nothing");
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin)]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(5);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe(`cxagent check: free-does-nothing 1.0.0 (${join(plugin, "free-does-nothing.so")})`);
    expect(lines).toContain("  pass  library        a shared object needing libc.so.6");
    expect(r.stdout).toMatch(/\n {2}FAIL {2}free {11}cxagent_plugin_free did not release \d+ of the \d+ strings it was given/);
    expect(r.stdout).toMatch(/\n {23}fix: release each pointer with the deallocator/);
    // Long lines are broken at spaces: only a word longer than a line (a path, a JSON preview) runs past 100.
    expect(lines.slice(1).filter((l) => l.length > 100 && !l.split(" ").some((w) => w.length > 60))).toEqual([]);
    // skipped: a Cortex plugin's three buffer checks
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe(`${CHECKS.length - 4} passed, 1 failed, 3 skipped`);
  }, 60_000);

  test("without a terminal or --hash, nothing runs: exit 4, saying how to approve it for the check", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = fixture("ctor-marker");
    const r = await cli(["check", plugin, "--json"], { env: { CXAGENT_FX_MARKER: marker } });
    expect(r.code).toBe(4);
    const hash = await hashOf(plugin);
    expect(r.json().error).toMatchObject({
      code: "E_NOT_APPROVED",
      message: `plugin 'ctor-marker' was not checked: check runs its code, so a person must approve its files first (hash ${hash})`,
      hint: `run './bin/cxagent check ${plugin}' on a terminal to be asked, or, after reviewing them, './bin/cxagent check ${plugin} --hash ${hash}'`,
    });
    expect(existsSync(marker)).toBe(false);
  });

  test("a --hash that is not the files' own is refused (exit 4), as approve refuses it", async () => {
    const r = await cli(["check", fixture("echo"), "--hash", "0".repeat(64), "--json"]);
    expect(r.code).toBe(4);
    expect(r.json().error.message).toContain("not to the 0000");
    const bad = await cli(["check", fixture("echo"), "--hash", "abc"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--hash takes 64 hexadecimal digits, not 'abc'");
  });

  test("on a terminal it asks, as approve does, and runs on yes; no leaves nothing run", async () => {
    using state = tempDir();
    const plugin = fixture("passes-check");
    const env = { CXAGENT_STATE_DIR: state.path };
    const yes = await tty(["check", plugin, "--only", "results,free"], [{ after: "Approve these exact files for this check?", send: "y" }], { env });
    expect(yes.output).toContain("passes-check 1.0.0");
    expect(yes.output).toContain("  pass  results");
    expect(yes.output).toContain("2 passed");
    expect(yes.code).toBe(0);
    const no = await tty(["check", plugin], [{ after: "Approve these exact files for this check?", send: "n" }], { env });
    expect(no.output).toContain("was not approved");
    expect(no.code).toBe(4);
    // The approval was the check's own: the user's state still has none for it.
    expect((await cli(["describe", plugin, "--json"], { env })).json().trust).toBe("new");
  }, 60_000);

  test("a sidecar that cannot be read is reported without asking anything, since nothing runs", async () => {
    const r = await cli(["check", fixture("sidecar-invalid"), "--json"]);
    expect(r.code).toBe(5);
    const byId = Object.fromEntries(r.json().checks.map((c: { id: string; status: string }) => [c.id, c.status]));
    expect(byId).toMatchObject({ library: "pass", exports: "pass", sidecar: "fail", results: "skip", ownership: "skip" });
  });

  test("--only runs the checks it names; an unknown one is an input error naming them all", async () => {
    const plugin = fixture("echo");
    const r = await cli(["check", plugin, "--only", "exports, sidecar", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().checks.map((c: { id: string }) => c.id)).toEqual(["exports", "sidecar"]);
    const unknown = await cli(["check", plugin, "--only", "exprots", "--json"]);
    expect(unknown.code).toBe(3);
    expect(unknown.json().error).toMatchObject({ code: "E_INVALID_INPUT", message: "cxagent check has no check named 'exprots'" });
    expect(unknown.json().error.hint).toStartWith("the checks: library, exports, sidecar");
  });
});

/** A TypeScript plugin whose one tool reads README.md in its working folder, as a project tool would. */
function readsReadme(dir: string, opts: { content?: boolean; lifecycle?: boolean } = {}): string {
  return writeModule(dir, "reads-readme", `
import { readFileSync } from "node:fs";
import { definePlugin } from "cxagent";
export default definePlugin({
  ${opts.lifecycle === false ? "" : "start() {},\n  stop() {},"}
  invoke() {
    let text: string;
    try { text = readFileSync("README.md", "utf8"); } catch { return { success: false, errorMessage: "no README.md here", output: {} }; }
    return { success: true, output: ${opts.content === false ? "{ lines: text.split('\\n').length }" : "{ content: text.split('\\n')[0] }"} };
  },
});
`, { tools: [{ name: "first_line", description: "The first line of the project's README.md.", inputSchema: { type: "object", properties: {} } }] });
}

describe("check runs the tools where a user's call would", () => {
  test("in an empty scratch folder by default, saying so; the success path unreached is a warning, not a pass", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path);
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,content", "--json"]);
    expect(r.json()).toMatchObject({ ranIn: { what: "empty", folder: null } });
    const content = r.json().checks.find((c: { id: string }) => c.id === "content");
    expect(content).toMatchObject({ status: "warn", seen: expect.stringContaining("no call succeeded") });
    expect(content.fix).toContain("--cwd <project> or --fixture <folder>");
    const text = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,content"]);
    expect(text.stdout).toContain("tools called in an empty scratch folder (--cwd or --fixture gives the tools a project to read)");
  }, 60_000);

  test("--fixture DIR: in a scratch copy of it, which is removed; the fixture is untouched", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path);
    const project = join(dir.path, "fixture");
    mkdirSync(project);
    writeFileSync(join(project, "README.md"), "# a project\nmore\n");
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,content", "--fixture", project, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ ok: true, ranIn: { what: "fixture", folder: project } });
    expect(r.json().checks.map((c: { status: string }) => c.status)).toEqual(["pass", "pass"]);
    expect(readdirSync(project)).toEqual(["README.md"]);
    const missing = await cli(["check", plugin, "--fixture", join(dir.path, "nowhere"), "--hash", await hashOf(plugin)]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`the fixture ${join(dir.path, "nowhere")} is not a folder`);
    expect((await cli(["check", plugin, "--fixture", project, "--cwd", project])).code).toBe(2);
  }, 60_000);

  test("--cwd DIR: in the project folder itself, which stays", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path);
    const project = join(dir.path, "project");
    mkdirSync(project);
    writeFileSync(join(project, "README.md"), "# the project\n");
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,content", "--cwd", project, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ ok: true, ranIn: { what: "project", folder: project } });
    expect(readFileSync(join(project, "README.md"), "utf8")).toBe("# the project\n");
  }, 60_000);

  test("a successful result without output.content fails the check (exit 5)", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path, { content: false });
    const project = join(dir.path, "fixture");
    mkdirSync(project);
    writeFileSync(join(project, "README.md"), "# a project\n");
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,content", "--fixture", project, "--json"]);
    expect(r.code).toBe(5);
    expect(r.json().checks.find((c: { id: string }) => c.id === "content")).toMatchObject({ status: "fail", seen: expect.stringContaining("first_line {}: output.content is missing") });
  }, 60_000);

  test("a module plugin that does not load fails describe (it has no handshake check), not a pass with exit 0", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path, { lifecycle: false });
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "describe,start", "--json"]);
    expect(r.code).toBe(5);
    expect(r.json().checks).toMatchObject([
      { id: "describe", status: "fail", seen: expect.stringContaining("the module did not load: plugin 'reads-readme' was refused") },
      { id: "start", status: "skip", seen: "the plugin did not load (see describe)" },
    ]);
  }, 60_000);

  test("a tool it cannot make arguments for is named wherever it is called anyway (results, concurrency)", async () => {
    using dir = tempDir();
    const plugin = writeModule(dir.path, "unfed", `
import { definePlugin } from "cxagent";
export default definePlugin({ start() {}, stop() {}, invoke(_tool, args) { return { success: true, output: { content: JSON.stringify(args) } }; } });
`, { tools: [{ name: "coded", description: "Takes a code.", inputSchema: { type: "object", properties: { code: { type: "string", pattern: "^[a-z]{3}[0-9]$" } }, required: ["code"] } }] });
    const r = await cli(["check", plugin, "--hash", await hashOf(plugin), "--only", "results,concurrency", "--json"]);
    const [results, concurrency] = r.json().checks;
    expect(results).toMatchObject({ id: "results", status: "warn", seen: expect.stringContaining("not called with valid arguments: coded (no arguments could be made from its inputSchema)") });
    expect(concurrency).toMatchObject({ id: "concurrency", seen: expect.stringContaining("coded called with {} (no arguments could be made from its inputSchema)") });
  }, 60_000);

  test("an approval of these exact files in the user's state folder is honoured: no second --hash", async () => {
    using dir = tempDir();
    const plugin = readsReadme(dir.path);
    const state = join(dir.path, "state");
    const unapproved = await cli(["check", plugin, "--only", "results", "--state-dir", state]);
    expect(unapproved.code).toBe(4);
    expect((await cli(["approve", plugin, "--hash", await hashOf(plugin), "--state-dir", state])).code).toBe(0);
    const before = readFileSync(join(state, "approvals.json"), "utf8");
    const r = await cli(["check", plugin, "--only", "results", "--state-dir", state, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().checks[0]).toMatchObject({ id: "results" });
    // nothing of check's own run is recorded there
    expect(readFileSync(join(state, "approvals.json"), "utf8")).toBe(before);
  }, 60_000);
});

