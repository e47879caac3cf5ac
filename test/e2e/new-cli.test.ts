/**
 * `cxagent new`, as a plugin author uses it: create a project, build it with the one command its
 * README gives, then describe, approve and call it through the CLI. The Rust half is skipped,
 * saying so, where cargo is not on PATH.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findCargo } from "../../scripts/_cargo.ts";
import { checkManifest } from "../../src/protocol/manifest.ts";
import { cli, ROOT } from "../helpers.ts";

const SELF = join(ROOT, "bin/cxagent");

const work = mkdtempSync(join(tmpdir(), "cxagent-new-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const hasMake = Bun.which("make") !== null && Bun.which("cc") !== null;
const hasCargo = findCargo() !== null;
if (!hasMake) console.warn("new-cli.test.ts: the build tests are skipped: they need make and cc on PATH");
if (!hasCargo) console.warn("new-cli.test.ts: the Rust tests are skipped: cargo is not on PATH");

/** The environment a build runs in: cargo offline, and its target folder the project's own. */
function buildEnv(): Record<string, string> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), CARGO_NET_OFFLINE: "true" };
  delete env.CARGO_TARGET_DIR;
  return env;
}

function make(folder: string) {
  const r = Bun.spawnSync(["make", "-C", folder], { env: buildEnv(), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, output: `${r.stdout.toString()}${r.stderr.toString()}` };
}

/** Approves by pinned hash through the CLI, as a script would after reviewing `describe`. */
async function approveByHash(plugin: string) {
  const hash = (await cli(["describe", plugin, "--json"])).json().hash;
  const r = await cli(["approve", plugin, "--hash", hash, "--json"]);
  expect(r.code).toBe(0);
}

/** Everything a built project must do through the CLI, whatever its language. */
async function drive(folder: string, name: string, tool: string, code = `${name}.so`) {
  const plugin = join(folder, "plugin");
  const described = await cli(["describe", plugin, "--json"]);
  expect(described.code).toBe(0);
  // The load set is what ships: no source, no build tree.
  expect(described.json().files.map((f: { path: string }) => f.path)).toEqual(["README.md", `${name}.plugin.json`, code].sort());
  expect(described.json().readme).toContain(`\`${tool}\``);

  // Untouched, it passes every check that applies to its kind (the README's step between building and approving it).
  const checked = await cli(["check", plugin, "--hash", described.json().hash, "--json"]);
  const notApplicable = (c: { status: string; seen: string }) => c.status === "skip" && /^does not apply to a (native|module) plugin$/.test(c.seen);
  expect(checked.json().checks.filter((c: { status: string; seen: string }) => c.status !== "pass" && !notApplicable(c))).toEqual([]);
  expect(checked.code).toBe(0);

  await approveByHash(plugin);

  const live = await cli(["describe", plugin, "--live", "--json"]);
  expect(live.code).toBe(0);
  expect(live.json().live).toMatchObject({ matches: true, difference: null });

  const hello = await cli(["invoke", plugin, tool, "--args", '{"name": "Ada"}', "--json"]);
  expect(hello.code).toBe(0);
  expect(hello.json().result).toMatchObject({ success: true, output: { content: "Hello, Ada!", name: "Ada" } });

  const text = await cli(["invoke", plugin, tool, "--args", '{"name": "Zoë \\"Z\\" \\\\ 😀", "times": "3"}']);
  expect(text.stdout).toBe('Hello, Zoë "Z" \\ 😀! Hello, Zoë "Z" \\ 😀! Hello, Zoë "Z" \\ 😀!\n');
  expect(text.code).toBe(0);

  // cxagent checks the arguments against the tool's inputSchema before the plugin sees them: exit 3,
  // naming the path and the rule (the template's own checks stay, for hosts that do not).
  const refusals: [unknown, string][] = [
    [{}, "name: is required but missing (required)"],
    [{ name: null }, "name: is null, must be a string (type)"],
    [{ name: 5 }, "name: is a number, must be a string (type)"],
    [{ name: ["Ada"] }, "name: is an array, must be a string (type)"],
    [{ name: "" }, "name: string is too short (0 < 1) (minLength)"],
    [{ name: "Ada", times: 4 }, "times: 4 is greater than 3 (maximum)"],
    [{ name: "Ada", times: 2.5 }, "times: is a number, must be an integer (type)"],
    [{ name: "Ada", times: "two" }, "times: is a string, must be an integer (type)"],
  ];
  for (const [args, message] of refusals) {
    const r = await cli(["invoke", plugin, tool, "--args", JSON.stringify(args), "--json"]);
    expect({ args, code: r.code, error: r.json().error?.message }).toEqual({ args, code: 3, error: `arguments for ${tool} do not match its inputSchema: ${message}` });
  }

  // Arguments nested deeper than the plugin reads are refused by the plugin, not a stack
  // overflow: 200 levels is past the native templates' limits (64 in C, 128 in Rust) and within
  // the 256 cxagent passes on. A module gets them as an object, already read.
  const deep = `{"name": "Ada", "junk": ${"[".repeat(200)}${"]".repeat(200)}}`;
  const nested = await cli(["invoke", plugin, tool, "--args", deep, "--json"]);
  if (code.endsWith(".ts")) {
    expect(nested.code).toBe(0);
  } else {
    expect(nested.code).toBe(5);
    expect(nested.json().error.message).toContain("the arguments could not be read");
  }

  // The one setting, from config.json; a value of the wrong kind falls back to the default.
  const config = join(folder, "..", `${name}-config`);
  mkdirSync(config, { recursive: true });
  for (const [greeting, expected] of [["Hi", "Hi, Ada!"], [42, "Hello, Ada!"], ["", "Hello, Ada!"], ["x".repeat(64), "Hello, Ada!"]] as const) {
    writeFileSync(join(config, "config.json"), JSON.stringify({ pluginPaths: [folder], plugins: { [name]: { file: code, settings: { greeting } } } }));
    const r = await cli(["invoke", name, tool, "--args", '{"name": "Ada"}', "--config-dir", config]);
    expect({ greeting, stdout: r.stdout, code: r.code }).toEqual({ greeting, stdout: `${expected}\n`, code: 0 });
  }
}

describe("cxagent new --lang c", () => {
  const folder = join(work, "hello-c");

  test("writes a project, says how to build and call it, and --json lists every file", async () => {
    const r = await cli(["new", "hello-c", "--lang", "c", "--json"], { cwd: work });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({
      name: "hello-c",
      language: "c",
      folder,
      plugin: join(folder, "plugin"),
      library: join(folder, "plugin/hello-c.so"),
      sidecar: join(folder, "plugin/hello-c.plugin.json"),
      tools: ["hello_c_greet"],
      files: [".gitignore", "Makefile", "README.md", "cxagent_plugin.h", "hello-c.c", "plugin/README.md", "plugin/hello-c.plugin.json"],
      build: { command: ["make"], cwd: folder },
      // the commands as this cxagent was run (here: the checkout's launcher, by its path)
      next: ["make -C hello-c", `${SELF} check hello-c/plugin`, `${SELF} approve hello-c/plugin`, `${SELF} invoke hello-c/plugin hello_c_greet --args '{"name": "Ada"}'`],
    });
    // The header is this cxagent's own; the sidecar is a valid manifest; no placeholder is left.
    expect(readFileSync(join(folder, "cxagent_plugin.h"), "utf8")).toBe(readFileSync(join(ROOT, "ffi/cxagent_plugin.h"), "utf8"));
    expect(checkManifest(JSON.parse(readFileSync(join(folder, "plugin/hello-c.plugin.json"), "utf8"))).ok).toBe(true);
    for (const file of r.json().files) expect(readFileSync(join(folder, file), "utf8")).not.toContain("@@");
  });

  test.skipIf(!hasMake)("builds with make, warning-free, and works through the CLI", async () => {
    const built = make(folder);
    expect(built.output).not.toContain("warning");
    expect(built.code).toBe(0);
    await drive(folder, "hello-c", "hello_c_greet");
  }, 60_000);

  test.skipIf(!hasMake)("compiles cleanly with -Werror -pedantic as C11", () => {
    const r = Bun.spawnSync(["make", "-C", folder, "-B", "CFLAGS=-O2 -Wall -Wextra -Werror -pedantic -std=c11"], { stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).not.toContain("warning");
    expect(r.exitCode).toBe(0);
  });
});

describe.skipIf(!hasCargo)("cxagent new --lang rust", () => {
  const folder = join(work, "hello-rs");

  test("writes a cargo project with no dependencies, edition 2024", async () => {
    const r = await cli(["new", "hello-rs", "--lang", "rust", "--json"], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.json().files).toEqual([".gitignore", "Cargo.toml", "Makefile", "README.md", "cxagent_plugin.h", "plugin/README.md", "plugin/hello-rs.plugin.json", "src/json.rs", "src/lib.rs"]);
    expect(r.json().tools).toEqual(["hello_rs_greet"]);
    const toml = readFileSync(join(folder, "Cargo.toml"), "utf8");
    expect(toml).toContain('name = "hello_rs"');
    expect(toml).toContain('edition = "2024"');
    expect(toml).toContain('crate-type = ["cdylib"]');
    expect(toml).toMatch(/\[dependencies\]\n\n/);
  });

  test("builds with make (cargo, then the copy beside the sidecar), warning-free, and works through the CLI", async () => {
    const built = make(folder);
    expect(built.output).not.toContain("warning");
    expect(built.code).toBe(0);
    expect(existsSync(join(folder, "target/release/libhello_rs.so"))).toBe(true);
    await drive(folder, "hello-rs", "hello_rs_greet");
  }, 180_000);

  test("names cargo refuses (keywords, a leading digit, upper case, dots) still make a crate it builds", async () => {
    for (const [name, crate] of [["test", "test_plugin"], ["fn", "fn_plugin"], ["1up", "plugin_1up"], ["My.Tool-X", "my_tool_x"]] as const) {
      const folder = join(work, `odd-${crate}`);
      expect((await cli(["new", name, "--lang", "rust", "--dir", folder])).code).toBe(0);
      expect(readFileSync(join(folder, "Cargo.toml"), "utf8")).toContain(`name = "${crate}"`);
      const checked = Bun.spawnSync(["cargo", "check", "--offline", "--quiet", "--manifest-path", join(folder, "Cargo.toml")], {
        env: { ...buildEnv(), CARGO_TARGET_DIR: join(work, "odd-target") },
        stderr: "pipe",
      });
      expect({ name, stderr: checked.stderr.toString(), code: checked.exitCode }).toEqual({ name, stderr: "", code: 0 });
    }
  }, 180_000);
});

describe("cxagent new --lang ts", () => {
  const folder = join(work, "hello-ts");

  test("writes a module plugin with nothing to build: the module and its sidecar in plugin/, types for the editor beside", async () => {
    const r = await cli(["new", "hello-ts", "--lang", "ts", "--json"], { cwd: work });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({
      name: "hello-ts",
      language: "ts",
      folder,
      plugin: join(folder, "plugin"),
      library: join(folder, "plugin/hello-ts.ts"),
      sidecar: join(folder, "plugin/hello-ts.plugin.json"),
      tools: ["hello_ts_greet"],
      files: ["README.md", "cxagent.d.ts", "plugin/README.md", "plugin/hello-ts.plugin.json", "plugin/hello-ts.ts", "tsconfig.json"],
      build: null,
      next: [`${SELF} check hello-ts/plugin`, `${SELF} approve hello-ts/plugin`, `${SELF} invoke hello-ts/plugin hello_ts_greet --args '{"name": "Ada"}'`],
    });
    const text = await cli(["new", "other-ts", "--lang", "ts"], { cwd: work });
    expect(text.stdout).toContain("approve it, call it (there is nothing to build):");
    expect(text.stdout).not.toContain("make");
    for (const file of r.json().files) expect(readFileSync(join(folder, file), "utf8")).not.toContain("@@");
  });

  test("type-checks as written, and its cxagent.d.ts says exactly what cxagent's own plugin API types say", () => {
    const checked = Bun.spawnSync([process.execPath, "check"], { cwd: folder, stdout: "pipe", stderr: "pipe" });
    expect({ out: `${checked.stdout}${checked.stderr}`, code: checked.exitCode }).toMatchObject({ code: 0 });
    // as its README says: TypeScript's own tsc (npx -p typescript tsc -p .)
    expect(readFileSync(join(folder, "README.md"), "utf8")).toContain("`npx -p typescript tsc -p .`");
    const tsc = Bun.spawnSync([join(ROOT, "node_modules/.bin/tsc"), "-p", "."], { cwd: folder, stdout: "pipe", stderr: "pipe" });
    expect({ out: `${tsc.stdout}${tsc.stderr}`, code: tsc.exitCode }).toEqual({ out: "", code: 0 });
    const api = join(ROOT, "src/protocol/module-plugin.ts");
    const names = ["ManifestInput", "JobResultInput", "GateAnswerInput", "SubmitRequestInput", "CommandResultInput", "LogLevel", "PluginContext", "GateContext", "CallContext", "ModulePlugin"];
    writeFileSync(
      join(folder, "drift.ts"),
      [
        `import type * as T from "cxagent";`,
        `import type * as R from ${JSON.stringify(api)};`,
        `type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;`,
        ...names.map((n) => `export const ${n}: Same<T.${n}, R.${n}> = true;`),
        `export const LOG_LEVELS: Same<typeof T.LOG_LEVELS, typeof R.LOG_LEVELS> = true;`,
        `export const definePlugin: Same<typeof T.definePlugin, typeof R.definePlugin> = true;`,
      ].join("\n"),
    );
    try {
      const drift = Bun.spawnSync([process.execPath, "check", "drift.ts", "cxagent.d.ts"], { cwd: folder, stdout: "pipe", stderr: "pipe" });
      expect({ out: `${drift.stdout}${drift.stderr}`, code: drift.exitCode }).toMatchObject({ code: 0 });
    } finally {
      rmSync(join(folder, "drift.ts"));
    }
  });

  test("works through the CLI as it is: approve, describe --live, calls, refusals, its setting", async () => {
    await drive(folder, "hello-ts", "hello_ts_greet", "hello-ts.ts");
  }, 180_000);
});

describe("what cxagent new refuses", () => {
  test.each([
    ["a space", "my plugin", '"my-plugin"'],
    ["a slash", "a/b", '"a-b"'],
    ["a leading dot", ".hidden", '"hidden"'],
    ["dots only", "..", null],
    ["65 characters", "x".repeat(65), `"${"x".repeat(64)}"`],
    ["an escape sequence", "evil\x1b[31m", '"evil-31m"'],
  ])("a name with %s: exit 3, nothing written, a valid name suggested", async (_what, name, suggestion) => {
    const dir = join(work, "refused");
    const r = await cli(["new", name, "--lang", "c", "--dir", dir, "--json"], { cwd: work });
    expect(r.code).toBe(3);
    expect(r.json().error).toMatchObject({ code: "E_INVALID_INPUT", message: expect.stringContaining("is not a plugin name") });
    if (suggestion) expect(r.json().error.hint).toBe(`try ${suggestion}`);
    expect(existsSync(dir)).toBe(false);
  });

  test("a folder that is not empty: exit 3 naming it, and nothing in it touched", async () => {
    const dir = join(work, "taken");
    mkdirSync(dir);
    writeFileSync(join(dir, "Makefile"), "mine\n");
    const r = await cli(["new", "taken", "--lang", "c", "--json"], { cwd: work });
    expect(r.code).toBe(3);
    expect(r.json().error.message).toBe(`cannot create the plugin in ${dir}: the folder is not empty (it holds 1 entry)`);
    expect(readdirSync(dir)).toEqual(["Makefile"]);
    expect(readFileSync(join(dir, "Makefile"), "utf8")).toBe("mine\n");
  });

  test("a file where the folder would go: exit 3", async () => {
    writeFileSync(join(work, "a-file"), "x");
    const r = await cli(["new", "a-file", "--lang", "c"], { cwd: work });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`cannot create the plugin in ${join(work, "a-file")}: a file of that name exists`);
  });

  test("an empty folder is used as it is, and --dir may name any new folder", async () => {
    mkdirSync(join(work, "empty"));
    expect((await cli(["new", "empty", "--lang", "c"], { cwd: work })).code).toBe(0);
    expect(existsSync(join(work, "empty/plugin/empty.plugin.json"))).toBe(true);
    const r = await cli(["new", "deep", "--lang", "c", "--dir", "a/b/c", "--json"], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.json().folder).toBe(join(work, "a/b/c"));
    expect(existsSync(join(work, "a/b/c/deep.c"))).toBe(true);
  });

  test("a folder it cannot write to: exit 3, and what it created is gone again", async () => {
    const r = await cli(["new", "nowhere", "--lang", "c", "--dir", "/proc/cxagent-new", "--json"], { cwd: work });
    expect(r.code).toBe(3);
    expect(r.json().error.message).toStartWith("cannot create the plugin in /proc/cxagent-new:");
  });

  test.each([
    ["no --lang", ["new", "x"], "'cxagent new' needs the plugin's language: --lang c, --lang rust or --lang ts"],
    ["a language it does not write", ["new", "x", "--lang", "go"], "cxagent new writes plugins in c, rust or ts, not 'go'"],
    ["TypeScript by another name", ["new", "x", "--lang", "typescript"], "cxagent new writes plugins in c, rust or ts, not 'typescript'"],
    ["no name", ["new", "--lang", "c"], "'cxagent new' needs <name>"],
  ])("%s: a usage error, exit 2", async (_what, args, message) => {
    const r = await cli([...args, "--json"], { cwd: work });
    expect(r.code).toBe(2);
    expect(r.json().error).toMatchObject({ code: "E_USAGE", message });
    expect(existsSync(join(work, "x"))).toBe(false);
  });
});
