/**
 * examples/cortex-wordcount, the Cortex native plugin in Rust, built from its source with cargo as
 * its README says, then pointed at and called through the CLI in each of the ways the README gives
 * a Cortex author. Skipped, saying so, where cargo is not on PATH.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildCrate, findCargo } from "../../scripts/_cargo.ts";
import { cli, ROOT } from "../helpers.ts";

const hasCargo = findCargo() !== null;
if (!hasCargo) console.warn("cortex-rust-example.test.ts: skipped: cargo is not on PATH, so the Cortex example cannot be built");

describe.skipIf(!hasCargo)("examples/cortex-wordcount, built with cargo", () => {
  const work = mkdtempSync(join(tmpdir(), "cxagent-cortex-example-"));
  const plugins = join(work, "plugins");
  const plugin = join(plugins, "cortex-wordcount");
  const env = { CXAGENT_CONFIG_DIR: join(work, "config"), CXAGENT_STATE_DIR: join(work, "state") };
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  beforeAll(async () => {
    const example = join(ROOT, "examples/cortex-wordcount");
    cpSync(example, plugin, { recursive: true, filter: (src) => !src.endsWith(".so") && src !== join(example, "lib") });
    const build = buildCrate(plugin, join(work, "target"));
    if (!build.ok) throw new Error(`cargo build failed:\n${build.output}`);
    mkdirSync(join(plugin, "lib"));
    copyFileSync(build.library, join(plugin, "lib", "libcortex_wordcount.so"));
    writeFileSync(join(work, "notes.txt"), "one two\nthree\n");
    mkdirSync(env.CXAGENT_CONFIG_DIR);
    const hash = (await cli(["describe", plugin, "--json"], { env })).json().hash;
    const approved = await cli(["approve", plugin, "--hash", hash, "--json"], { env });
    if (approved.code !== 0) throw new Error(`approve failed: ${approved.stdout}${approved.stderr}`);
  }, 180_000);

  test("before it runs: the load set is the source, manifest.toml, the README and lib/, named by manifest.toml", async () => {
    const r = await cli(["describe", plugin, "--json"], { env });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ name: "cortex-wordcount", kind: "cortex", trust: "approved", manifest: { version: "1.0.0", tools: [] } });
    expect(r.json().files.map((f: { path: string }) => f.path)).toEqual(["Cargo.lock", "Cargo.toml", "README.md", "lib/libcortex_wordcount.so", "manifest.toml", "src/json.rs", "src/lib.rs"]);
  });

  test("describe --live: its two tools, count_file gated by its read_file effect, with its 10 s deadline", async () => {
    const r = await cli(["describe", plugin, "--live", "--json"], { env });
    expect(r.code).toBe(0);
    expect(r.json().live.manifest.tools).toEqual([
      expect.objectContaining({ name: "word_count", gated: false, inputSchema: { type: "object", properties: { text: { type: "string", description: "The text to count the words of" } }, required: ["text"] } }),
      expect.objectContaining({ name: "count_file", gated: true, alwaysAskable: true }),
    ]);
    expect(r.json().live).toMatchObject({ deadlines: [{ tool: "count_file", ms: 10_000 }], about: "Exact word, line and character counts, as a Cortex native plugin" });
  });

  test("word_count, and its own errors as failed results", async () => {
    expect(await cli(["invoke", plugin, "word_count", "--args", '{"text": "héllo wörld, again"}'], { env })).toMatchObject({ code: 0, stdout: "3 words\n" });
    // Arguments that break the tool's input_schema never reach it: cxagent refuses them (exit 3).
    const missing = await cli(["invoke", plugin, "word_count", "--args", "{}", "--json"], { env });
    expect(missing.code).toBe(3);
    expect(missing.json().error).toMatchObject({ code: "E_INVALID_INPUT", message: "arguments for word_count do not match its inputSchema: text: is required but missing (required)" });
    // A failure of its own is a failed result (exit 1), its text what the model reads.
    const absent = await cli(["invoke", plugin, "count_file", "--args", '{"path": "no-such-file.txt"}', "--allow", "--json", "--cwd", work], { env });
    expect(absent.code).toBe(1);
    expect(absent.json().result).toMatchObject({ success: false, errorMessage: "cannot read no-such-file.txt: No such file or directory (os error 2)" });
  });

  test("count_file asks: denied without a terminal, run with --allow", async () => {
    expect((await cli(["invoke", plugin, "count_file", "--args", '{"path": "notes.txt"}', "--cwd", work], { env })).code).toBe(4);
    const allowed = await cli(["invoke", plugin, "count_file", "--args", '{"path": "notes.txt"}', "--cwd", work, "--allow"], { env });
    expect(allowed).toMatchObject({ code: 0, stdout: "notes.txt has 2 lines, 3 words and 14 characters (14 bytes).\n" });
  });

  test("pointed at by its library, by its name from a plugin folder, and by a config.json entry", async () => {
    const byLibrary = await cli(["invoke", join(plugin, "lib", "libcortex_wordcount.so"), "word_count", "--args", '{"text": "a b"}'], { env });
    expect(byLibrary).toMatchObject({ code: 0, stdout: "2 words\n" });
    writeFileSync(join(env.CXAGENT_CONFIG_DIR, "config.json"), JSON.stringify({ pluginPaths: [plugins] }));
    expect(await cli(["invoke", "cortex-wordcount", "word_count", "--args", '{"text": "by name"}'], { env })).toMatchObject({ code: 0, stdout: "2 words\n" });
    // a Cortex plugin's entry names its manifest.toml, found in the plugin folders by its name
    cpSync(join(ROOT, "test/fixtures/build/cortex-basic"), join(plugins, "another"), { recursive: true });
    writeFileSync(join(plugins, "another", "manifest.toml"), 'name = "cortex-basic"\nversion = "1"\n[native]\nlibrary = "cortex-basic.so"\n');
    writeFileSync(join(env.CXAGENT_CONFIG_DIR, "config.json"), JSON.stringify({ pluginPaths: [plugins], plugins: { "cortex-wordcount": { file: "manifest.toml" } } }));
    expect(await cli(["invoke", "cortex-wordcount", "word_count", "--args", '{"text": "from config"}'], { env })).toMatchObject({ code: 0, stdout: "2 words\n" });
    writeFileSync(join(env.CXAGENT_CONFIG_DIR, "config.json"), JSON.stringify({ plugins: { "cortex-wordcount": { file: "manifest.toml", path: plugin } } }));
    expect(await cli(["invoke", "cortex-wordcount", "word_count", "--args", '{"text": "pinned by path"}'], { env })).toMatchObject({ code: 0, stdout: "3 words\n" });
    writeFileSync(join(env.CXAGENT_CONFIG_DIR, "config.json"), "{}");
  });
});
