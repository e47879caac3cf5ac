/**
 * The conventions a user of gh, npm or cargo expects, through the real CLI: version and help
 * flags, `help <command>`, "did you mean", strict positionals, colour switches, completions,
 * `cxagent paths`, and one JSON document on stdout for every --json run, failures included.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { approve, CALCULATOR, cli, CONFIG_DIR, ROOT, STATE_DIR, tempDir, tty } from "../helpers.ts";

beforeAll(async () => {
  await approve(CALCULATOR);
});

/** stdout holds exactly one JSON document (and nothing else). */
function oneDocument(stdout: string): unknown {
  const text = stdout.trim();
  expect(text.length).toBeGreaterThan(0);
  return JSON.parse(text); // throws on a second document or on text around it
}

describe("version and help", () => {
  test.each([["-v"], ["-V"], ["--version"], ["version"]])("%s prints the version alone", async (flag) => {
    expect(await cli([flag])).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });

  test("--version --json is a document; --version --verbose says more", async () => {
    const r = await cli(["--version", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ name: "cxagent", version: pkg.version, contract: 4, oldestContract: 2, bun: Bun.version, platform: `${process.platform}-${process.arch}` });
    const verbose = await cli(["--version", "--verbose"]);
    expect(verbose.stdout).toBe(`cxagent ${pkg.version}\nplugin contract 4 (loads 2 to 4)\nbun ${Bun.version}\nplatform ${process.platform}-${process.arch}\n`);
  });

  test("help <command> is that command's --help; -h too; help itself lists the commands", async () => {
    const a = await cli(["help", "invoke"]);
    const b = await cli(["invoke", "--help"]);
    const c = await cli(["invoke", "-h"]);
    expect(a.code).toBe(0);
    expect(a.stdout).toContain("USAGE ./bin/cxagent invoke [OPTIONS] <PLUGIN> <TOOL> [INPUT]");
    expect(b.stdout).toBe(a.stdout);
    expect(c.stdout).toBe(a.stdout);
    const top = await cli(["help"]);
    // no row padded with trailing spaces (citty pads its tables to the widest row)
    for (const screen of [top.stdout, (await cli(["invoke", "--help"])).stdout]) expect(screen.split("\n").filter((l) => / $/.test(l))).toEqual([]);
    expect(top.stdout).toContain("list|install|uninstall|describe|approve|revoke|load|invoke|gate|command|watch|grants|approvals|secrets|reap|result|instructions|mcp|new|check|paths|config|completions|version|help");
    expect(top.stdout).not.toContain("__complete");
    expect((await cli(["--help"])).stdout).toBe(top.stdout);
    const json = await cli(["help", "describe", "--json"]);
    expect(json.json()).toEqual({ command: "describe", usage: expect.stringContaining("USAGE ./bin/cxagent describe") });
  });
});

describe("did you mean", () => {
  test.each([
    [["invok"], "unknown command 'invok'; did you mean 'invoke'?"],
    [["help", "descibe"], "unknown command 'descibe'; did you mean 'describe'?"],
    [["describe", CALCULATOR, "--liv"], "unknown option '--liv' for 'cxagent describe'; did you mean '--live'?"],
    [["invoke", CALCULATOR, "calc_add", "--arg", "{}"], "unknown option '--arg' for 'cxagent invoke'; did you mean '--args'?"],
    [["describe", "calculater"], "no plugin named 'calculater'"],
    [["invoke", CALCULATOR, "calc_multiplY"], "plugin 'calculator' has no tool 'calc_multiplY'; did you mean 'calc_multiply'?"],
    [["completions", "zhs"], "cxagent has completions for bash, zsh, fish, not 'zhs'; did you mean 'zsh'?"],
  ])("%j", async (args, message) => {
    const r = await cli([...args, "--json"]);
    expect(r.code).toBeOneOf([2, 3]);
    expect((oneDocument(r.stdout) as { error: { message: string } }).error.message).toBe(message);
  });

  test("a plugin name close to a discovered one is suggested", async () => {
    using dir = tempDir();
    const plugins = join(dir.path, "config", "plugins");
    mkdirSync(plugins, { recursive: true });
    symlinkSync(CALCULATOR, join(plugins, "calculator"));
    const r = await cli(["describe", "calculater", "--json"], { env: { CXAGENT_CONFIG_DIR: join(dir.path, "config") } });
    expect(r.code).toBe(3);
    expect(r.json().error.message).toBe("no plugin named 'calculater'; did you mean 'calculator'?");
  });
});

describe("positionals and flags are checked, never ignored", () => {
  test.each([
    [["list", "extra"], "unexpected argument 'extra' for 'cxagent list', which takes no arguments"],
    [["describe", "a", "b"], "unexpected argument 'b' for 'cxagent describe', which takes <plugin>"],
    [["invoke", "a", "b", "-", "d"], "unexpected argument 'd' for 'cxagent invoke', which takes <plugin> <tool> <input>"],
    [["describe"], "'cxagent describe' needs <plugin>"],
    [["--json=maybe", "list"], "option '--json=maybe' is a switch: give it alone, or as =true or =false"],
    [["invoke", CALCULATOR, "calc_add", "--timeout"], "option '--timeout' needs a value"],
  ])("%j is a usage error, exit 2", async (args, message) => {
    const r = await cli([...args, "--json"]);
    expect(r.code).toBe(2);
    expect(r.json().error).toMatchObject({ code: "E_USAGE", message });
  });
});

describe("--json: exactly one document on stdout, whatever happens", () => {
  test.each([
    [["--json"], 2],
    [["--json=true", "nonsense"], 2],
    [["--json=true", "describe", "nope"], 3],
    [["describe", "nope", "--json=1"], 3],
    [["--version", "--json"], 0],
    [["--help", "--json"], 0],
    [["list", "--bogus", "--json"], 2],
    [["paths", "--json"], 0],
    [["completions", "bash", "--json"], 0],
    [["invoke", "--json"], 2],
    [["invoke", CALCULATOR, "calc_multiply", "--args", "{", "--json"], 3],
  ])("%j → exit %d", async (args, code) => {
    const r = await cli(args);
    expect(r.code).toBe(code);
    oneDocument(r.stdout);
  });

  test("--json=false and --no-json mean text; -- ends the flags", async () => {
    expect((await cli(["--version", "--json=false"])).stdout).toBe(`${pkg.version}\n`);
    expect((await cli(["--version", "--json", "--no-json"])).stdout).toBe(`${pkg.version}\n`);
    const text = await cli(["command", CALCULATOR, "x", "--", "--json"]);
    expect(text.stdout).toBe("");
    expect(text.stderr).toStartWith("error plugin 'calculator' declares no command 'x'");
  });
});

describe("invoke: one envelope {ok, result, error}, ok false exactly when the exit code is neither 0 nor 1", () => {
  const cases: [string, string[], number, boolean][] = [
    ["success", ["calc_multiply", "--args", '{"a": 6, "b": 7}'], 0, true],
    ["the tool's own failure", ["calc_divide", "--args", '{"a": 1, "b": 0}', "--allow"], 1, true],
    ["denied by cxagent", ["calc_add", "--args", '{"a": 1, "b": 2}'], 4, false],
    ["invalid arguments", ["calc_multiply", "--args", '{"a": 1}'], 3, false],
    ["no such tool", ["calc_nope"], 3, false],
    ["usage", ["calc_multiply", "--args"], 2, false],
  ];
  for (const mode of ["--json", "--jsonl"]) {
    test.each(cases)(`${mode}: %s`, async (_what, args, code, ok) => {
      const r = await cli(["invoke", CALCULATOR, ...args, mode]);
      expect(r.code).toBe(code);
      const last = mode === "--json" ? JSON.parse(r.stdout) : JSON.parse(r.stdout.trimEnd().split("\n").at(-1)!);
      expect(Object.keys(last).sort()).toEqual(["error", "ok", "result"]);
      expect(last.ok).toBe(ok);
      expect(last.error === null).toBe(ok);
      if (!ok) expect(last.error).toMatchObject({ code: expect.stringMatching(/^E_/), message: expect.any(String) });
    });
  }

  test("the README's jq filter reads every case", async () => {
    const filter = 'if .ok then .result.output.content else "error \\(.error.code): \\(.error.message)" end';
    for (const [, args, code] of cases) {
      const r = await cli(["invoke", CALCULATOR, ...args, "--json"]);
      expect(r.code).toBe(code);
      const jq = Bun.spawnSync(["jq", "-r", filter], { stdin: new TextEncoder().encode(r.stdout) });
      expect(jq.exitCode).toBe(0);
      expect(jq.stdout.toString().trim().length).toBeGreaterThan(0);
    }
  });
});

describe("colour", () => {
  test("an error on a terminal is red; NO_COLOR turns it off; FORCE_COLOR turns it on off a terminal", async () => {
    const onTerminal = await tty(["describe", "nope"], [], { env: { NO_COLOR: "" } });
    expect(onTerminal.raw).toContain("\x1b[31merror\x1b[39m");
    const noColor = await tty(["describe", "nope"], [], { env: { NO_COLOR: "1" } });
    expect(noColor.raw).not.toContain("\x1b[31m");
    const forced = await cli(["describe", "nope"], { env: { NO_COLOR: "", FORCE_COLOR: "1" } });
    expect(forced.stderr).toStartWith("\x1b[31merror\x1b[39m no plugin named 'nope'");
    const piped = await cli(["describe", "nope"], { env: { NO_COLOR: "" } });
    expect(piped.stderr).toStartWith("error no plugin named 'nope'");
    const zero = await cli(["describe", "nope"], { env: { NO_COLOR: "", FORCE_COLOR: "0" } });
    expect(zero.stderr).toStartWith("error no plugin named 'nope'");
  });

  test("--no-color turns it off on a terminal, --color on off one; the last one given wins", async () => {
    const off = await tty(["describe", "nope", "--no-color"], [], { env: { NO_COLOR: "" } });
    expect(off.raw).not.toContain("\x1b[31m");
    expect(off.output).toContain("error no plugin named 'nope'");
    const on = await cli(["describe", "nope", "--color"], { env: { NO_COLOR: "1" } });
    expect(on.stderr).toStartWith("\x1b[31merror\x1b[39m no plugin named 'nope'");
    expect((await cli(["describe", "nope", "--color", "--no-color"], { env: { NO_COLOR: "" } })).stderr).toStartWith("error no plugin named 'nope'");
    // also before the command, and on a usage error
    expect((await cli(["--color", "frob"], { env: { NO_COLOR: "1" } })).stderr).toStartWith("\x1b[31merror\x1b[39m unknown command 'frob'");
  });
});

describe("shell completions", () => {
  /** A folder with `cxagent` in it: this checkout's launcher, as a user's PATH would have it. */
  function pathWithCxagent(dir: string): string {
    const bin = join(dir, "bin");
    mkdirSync(bin);
    symlinkSync(join(ROOT, "bin/cxagent"), join(bin, "cxagent"));
    return `${bin}:${process.env.PATH}`;
  }

  test("__complete offers commands, flags, plugin names, tool and command names", async () => {
    const complete = async (...words: string[]) => (await cli(["__complete", "--", ...words])).stdout.trimEnd().split("\n").filter(Boolean);
    expect(await complete("in")).toEqual(["install", "instructions", "invoke"]);
    expect(await complete("describe", "--l")).toEqual(["--live"]);
    expect(await complete("invoke", CALCULATOR, "calc_")).toEqual(["calc_add", "calc_divide", "calc_multiply"]);
    expect(await complete("completions", "")).toEqual(["bash", "fish", "zsh"]);
    expect(await complete("new", "x", "--lang", "")).toEqual(["c", "rust"]);
    expect(await complete("describe", "nothing-starts-like-this")).toEqual([]);
  });

  test("bash: the script completes through the CLI", async () => {
    using dir = tempDir();
    const PATH = pathWithCxagent(dir.path);
    const script = (await cli(["completions", "bash"])).stdout;
    writeFileSync(join(dir.path, "c.bash"), script);
    const run = (line: string) =>
      Bun.spawnSync(["bash", "-c", `source ${join(dir.path, "c.bash")}; COMP_WORDS=(${line}); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _cxagent; printf '%s\\n' "\${COMPREPLY[@]}"`], {
        cwd: ROOT,
        env: { ...process.env, PATH, CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR },
      }).stdout.toString().trimEnd();
    expect(run("cxagent inv")).toBe("invoke");
    expect(run("cxagent invoke examples/calculator calc_d")).toBe("calc_divide");
  });

  for (const shell of ["zsh", "fish"] as const) {
    const found = Bun.which(shell);
    test.skipIf(!found)(`${shell}: the script loads and completes through the CLI (skipped where ${shell} is not installed)`, async () => {
      using dir = tempDir();
      const PATH = pathWithCxagent(dir.path);
      const script = (await cli(["completions", shell])).stdout;
      const file = join(dir.path, `c.${shell}`);
      writeFileSync(file, script);
      const env = { ...process.env, PATH, CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR, HOME: dir.path };
      const cmd =
        shell === "fish"
          ? ["fish", "--no-config", "-c", `source ${file}; complete -C 'cxagent invoke examples/calculator calc_m'`]
          : ["zsh", "-f", "-c", `autoload -Uz compinit; compinit -u; source ${file}; print -r -- \${+functions[_cxagent]} \${_comps[cxagent]}`];
      const r = Bun.spawnSync(cmd, { cwd: ROOT, env });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.toString()).toContain(shell === "fish" ? "calc_multiply" : "1 _cxagent");
    });
  }
});

describe("cxagent paths", () => {
  test("shows the project, config and state folders and the plugin folders in search order, and what can be read", async () => {
    using dir = tempDir();
    const config = join(dir.path, "config");
    const state = join(dir.path, "state");
    mkdirSync(join(config, "plugins"), { recursive: true });
    writeFileSync(join(config, "config.json"), JSON.stringify({ pluginPaths: ["./mine"] }));
    mkdirSync(join(dir.path, "mine"));
    chmodSync(join(dir.path, "mine"), 0o000);
    const env = { CXAGENT_CONFIG_DIR: config, CXAGENT_STATE_DIR: state };
    const r = await cli(["paths", "--cwd", dir.path, "--json"], { env });
    expect(r.code).toBe(0);
    const doc = r.json();
    expect(doc.project).toMatchObject({ path: dir.path, exists: true, kind: "folder" });
    expect(doc.config.file).toMatchObject({ path: join(config, "config.json"), exists: true, readable: true, problem: null });
    expect(doc.state).toMatchObject({ path: state, exists: false });
    expect(doc.plugins.map((p: { path: string; origin: string }) => [p.path, p.origin])).toEqual([
      [join(dir.path, "mine"), "pluginPaths"],
      [join(dir.path, ".cxagent/plugins"), "project"],
      [join(config, "plugins"), "config"],
    ]);
    const text = await cli(["paths", "--cwd", dir.path], { env });
    expect(text.stdout).toContain(`state        ${state}  (missing; made at the first approval or grant)`);
    expect(text.stdout).toContain(`  1. ${join(dir.path, "mine")}  (pluginPaths in config.json; folder${process.getuid?.() === 0 ? "" : ", NOT READABLE"}`);
    chmodSync(join(dir.path, "mine"), 0o755);
    writeFileSync(join(config, "config.json"), "{not json");
    const broken = await cli(["paths", "--cwd", dir.path, "--json"], { env });
    expect(broken.code).toBe(0);
    expect(broken.json().config.file.problem).toContain("is not valid JSON");
  });
});

describe("run the way the docs say: npx and npm run, from a folder inside the checkout", () => {
  /** No npm variables of the test run itself, no bun on PATH: a user's shell after npm ci. */
  const userEnv = (state: string) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("npm_") && k !== "INIT_CWD") env[k] = v;
    env.PATH = (process.env.PATH ?? "").split(":").filter((d) => d && !d.includes("node_modules")).join(":");
    return { ...env, NO_COLOR: "1", CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: state } as Record<string, string>;
  };
  const run = async (cmd: string[], cwd: string, env: Record<string, string>) => {
    const proc = Bun.spawn(cmd, { cwd, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };

  test("npm run -s cxagent --: paths are the folder the user is in (INIT_CWD), and hints say npm run -s cxagent --", async () => {
    using dir = tempDir();
    const env = userEnv(dir.path);
    const examples = join(ROOT, "examples");
    const described = await run(["npm", "run", "-s", "cxagent", "--", "describe", "./calculator", "--json"], examples, env);
    expect(described.code).toBe(0);
    expect(JSON.parse(described.stdout).folder).toBe(CALCULATOR);
    const refused = await run(["npm", "run", "-s", "cxagent", "--", "invoke", "./calculator", "calc_multiply", "--args", '{"a": 1, "b": 2}'], examples, env);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("'npm run -s cxagent -- describe ./calculator', then approve it: 'npm run -s cxagent -- approve ./calculator' on a terminal");
  }, 30_000);

  test("npx cxagent: hints say npx cxagent; with cxagent on PATH they say cxagent", async () => {
    using dir = tempDir();
    const env = userEnv(dir.path);
    const refused = await run(["npx", "cxagent", "invoke", "calculator", "calc_multiply", "--args", '{"a": 1, "b": 2}'], join(ROOT, "examples"), env);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("'npx cxagent approve calculator' on a terminal");
    const bin = join(dir.path, "bin");
    mkdirSync(bin);
    symlinkSync(join(ROOT, "bin/cxagent"), join(bin, "cxagent"));
    const onPath = await run(["cxagent", "invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 1, "b": 2}'], ROOT, { ...env, PATH: `${bin}:${env.PATH}` });
    expect(onPath.code).toBe(4);
    expect(onPath.stderr).toContain("'cxagent approve examples/calculator' on a terminal");
  }, 30_000);
});
