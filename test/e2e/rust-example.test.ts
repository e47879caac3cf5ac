/**
 * examples/wordcount, the Rust example, built from its source with cargo the way its README says,
 * then approved and called through the CLI as a user would. Skipped, saying so, where cargo is
 * not on PATH.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildCrate, findCargo } from "../../scripts/_cargo.ts";
import { cli, ROOT } from "../helpers.ts";

const hasCargo = findCargo() !== null;
if (!hasCargo) console.warn("rust-example.test.ts: skipped: cargo is not on PATH, so the Rust example cannot be built");

describe.skipIf(!hasCargo)("examples/wordcount, built with cargo", () => {
  const work = mkdtempSync(join(tmpdir(), "cxagent-rust-example-"));
  const plugin = join(work, "wordcount");
  const project = join(work, "project");
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  beforeAll(async () => {
    // The example's source only: what a person who cloned the repository has before building.
    const example = join(ROOT, "examples/wordcount");
    cpSync(example, plugin, { recursive: true, filter: (src) => !src.endsWith(".so") && src !== join(example, "target") });
    const build = buildCrate(plugin, join(work, "target"));
    if (!build.ok) throw new Error(`cargo build failed:\n${build.output}`);
    copyFileSync(build.library, join(plugin, "wordcount.so"));
    cpSync(join(ROOT, "examples/wordcount/README.md"), join(project, "notes.md"));
    writeFileSync(join(project, "two-lines.txt"), "héllo wörld\nsecond line\n");
    symlinkSync("/etc/hosts", join(project, "hosts-link"));
    const hash = (await cli(["describe", plugin, "--json"])).json().hash;
    const approved = await cli(["approve", plugin, "--hash", hash, "--json"]);
    if (approved.code !== 0) throw new Error(`approve failed: ${approved.stdout}${approved.stderr}`);
  }, 180_000);

  test("the load set is the source, the sidecar, the README and the library: no build tree", async () => {
    const r = await cli(["describe", plugin, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().files.map((f: { path: string }) => f.path)).toEqual(["Cargo.lock", "Cargo.toml", "README.md", "src/json.rs", "src/lib.rs", "wordcount.plugin.json", "wordcount.so"]);
  });

  test("describe --live: what the library describes is its sidecar", async () => {
    const r = await cli(["describe", plugin, "--live", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().live).toMatchObject({ matches: true, difference: null });
  });

  test("wordcount_text counts lines, words and Unicode characters", async () => {
    const r = await cli(["invoke", plugin, "wordcount_text", "--args", JSON.stringify({ text: "héllo wörld\nsecond line" }), "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().result.output).toEqual({ content: "The text has 2 lines, 4 words and 23 characters.", lines: 2, words: 4, characters: 23, bytes: 25 });
  });

  test("wordcount_file reads a relative path from the project folder, without asking", async () => {
    const r = await cli(["invoke", plugin, "wordcount_file", "--args", '{"path": "two-lines.txt"}', "--cwd", project]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("two-lines.txt has 2 lines, 4 words and 24 characters (26 bytes).\n");
    expect(r.code).toBe(0);
  });

  test("a file it cannot read is the tool failing on its own terms: exit 1, the reason for the model", async () => {
    const r = await cli(["invoke", plugin, "wordcount_file", "--args", '{"path": "missing.txt"}', "--cwd", project, "--json"]);
    expect(r.code).toBe(1);
    expect(r.json().result).toMatchObject({ success: false, errorMessage: expect.stringContaining("cannot read missing.txt") });
    expect(r.json().result.output.content).toContain("cannot read missing.txt");
  });

  test.each([
    ["a missing argument", {}, "text: is required but missing (required)"],
    ["a number for a string", { text: 3 }, "text: is a number, must be a string (type)"],
    ["null", { text: null }, "text: is null, must be a string (type)"],
  ])("%s is refused by cxagent against the inputSchema, naming the argument: exit 3", async (_what, args, message) => {
    const r = await cli(["invoke", plugin, "wordcount_text", "--args", JSON.stringify(args), "--json"]);
    expect(r.code).toBe(3);
    expect(r.json().error.message).toBe(`arguments for wordcount_text do not match its inputSchema: ${message}`);
  });

  test("the gate asks only for a path that leaves the project folder, and never offers Always", async () => {
    const inside = await cli(["gate", plugin, "wordcount_file", "--args", '{"path": "notes.md"}', "--cwd", project, "--json"]);
    expect(inside.json()).toMatchObject({ ask: false, source: "gate" });
    for (const path of ["/etc/hosts", "../secret.txt", "a/../../b"]) {
      const outside = await cli(["gate", plugin, "wordcount_file", "--args", JSON.stringify({ path }), "--cwd", project, "--json"]);
      expect(outside.json()).toMatchObject({ ask: true, source: "gate", display: `wordcount_file: read ${path}, outside the project folder`, alwaysOffered: false });
    }
    const absoluteInside = await cli(["gate", plugin, "wordcount_file", "--args", JSON.stringify({ path: join(project, "notes.md") }), "--cwd", project, "--json"]);
    expect(absoluteInside.json()).toMatchObject({ ask: false });
  });

  test("without a terminal, a read outside the project is denied unless allowed for the one call", async () => {
    const denied = await cli(["invoke", plugin, "wordcount_file", "--args", '{"path": "/etc/hosts"}', "--cwd", project]);
    expect(denied.code).toBe(4);
    const allowed = await cli(["invoke", plugin, "wordcount_file", "--args", JSON.stringify({ path: join(ROOT, "package.json") }), "--cwd", project, "--allow", "--json"]);
    expect(allowed.code).toBe(0);
    expect(allowed.json().result.output.path).toBe(join(ROOT, "package.json"));
  });

  test("a path the gate let through, that a symbolic link takes out of the project, is refused unread", async () => {
    const gate = await cli(["gate", plugin, "wordcount_file", "--args", '{"path": "hosts-link"}', "--cwd", project, "--json"]);
    expect(gate.json()).toMatchObject({ ask: false });
    const r = await cli(["invoke", plugin, "wordcount_file", "--args", '{"path": "hosts-link"}', "--cwd", project, "--json"]);
    expect(r.code).toBe(5);
    expect(r.json().error.message).toContain("hosts-link leads outside the project folder, to /etc/hosts");
  });

  test("JSON nested past the plugin's depth limit is refused, not a stack overflow", async () => {
    // 200 levels: past the plugin's 128, within the 256 cxagent passes on.
    const deep = `{"text": "x", "junk": ${"[".repeat(200)}${"]".repeat(200)}}`;
    const r = await cli(["invoke", plugin, "wordcount_text", "--args", deep, "--json"]);
    expect(r.json().error?.code ?? null).not.toBe("E_CRASHED");
    expect(r.code).toBe(5);
    expect(r.json().error.message).toContain("the arguments could not be read: arrays and objects nested too deeply");
  });
});
