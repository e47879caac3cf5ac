/**
 * The CLI as a user runs it: real processes, stdout parsed as whole documents, exit codes.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkManifest } from "../../src/protocol/manifest.ts";
import { approve, CALCULATOR, cli, CONFIG_DIR, copyFixture, fixture, HOME, hostsOf, ROOT, RUNTIME_DIR, STATE_DIR, tempDir, tty, until, writeModule } from "../helpers.ts";

beforeAll(async () => {
  for (const name of ["handshake-99", "crash-in-invoke", "invoke-replies", "slow-invoke"]) await approve(fixture(name));
  await approve(CALCULATOR);
});

const calculatorManifest = () => {
  const checked = checkManifest(JSON.parse(readFileSync(join(CALCULATOR, "calculator.plugin.json"), "utf8")));
  if (!checked.ok) throw new Error("the calculator's sidecar is invalid");
  return checked.manifest;
};

describe("describe", () => {
  test("a TypeScript plugin: kind module, its module in place of a library, its manifest from the sidecar", async () => {
    const folder = join(ROOT, "examples/calculator-ts");
    const r = await cli(["describe", folder, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ name: "calculator-ts", kind: "module", library: join(folder, "calculator-ts.ts"), ships: [], manifest: { ...calculatorManifest(), name: "calculator-ts" } });
    const text = await cli(["describe", folder]);
    expect(text.stdout).toContain(`module: ${join(folder, "calculator-ts.ts")} (TypeScript/JavaScript, run by cxagent's Bun)`);
  });

  test("--json prints the sidecar, where it lives and the README", async () => {
    const r = await cli(["describe", "examples/calculator", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({
      name: "calculator",
      kind: "native",
      cortex: null,
      library: join(CALCULATOR, "calculator.so"),
      sidecar: join(CALCULATOR, "calculator.plugin.json"),
      folder: CALCULATOR,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      trust: "approved",
      changes: null,
      approvedElsewhere: [],
      settings: null,
      shadowing: null,
      ships: [],
      refused: null,
      // The calculator is pure: it may touch nothing but its own folder (issue 39 point 8).
      sandbox: expect.objectContaining({ effective: { fs: { read: [], write: [] }, net: "none" }, imposed: null, words: "reads nothing (and its own folder); writes nothing; no network", layers: expect.arrayContaining(["landlock", "seccomp"]), missing: [] }),
      files: ["README.md", "calculator.c", "calculator.plugin.json", "calculator.so"].map((path) => ({ path, size: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })),
      manifest: calculatorManifest(),
      readme: readFileSync(join(CALCULATOR, "README.md"), "utf8"),
      live: null,
      disabledBy: [],
      unmatched: [],
      context: expect.objectContaining({ estimate: "tokens ≈ UTF-8 bytes of {name, description, inputSchema} as JSON ÷ 4", hiddenTokens: 0 }),
    });
  });

  test("accepts the library, the sidecar or the folder", async () => {
    for (const ref of ["examples/calculator/calculator.so", "examples/calculator/calculator.plugin.json", "examples/calculator/"]) {
      const r = await cli(["describe", ref, "--json"]);
      expect(r.code).toBe(0);
      expect(r.json().name).toBe("calculator");
    }
  });

  test("--live loads the plugin and says it matches", async () => {
    const r = await cli(["describe", "examples/calculator", "--live", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().live).toEqual({ manifest: calculatorManifest(), matches: true, difference: null });
  });

  test("for people: the tools and their permission, then the README", async () => {
    const r = await cli(["describe", "examples/calculator"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("calculator 1.0.0  (contract 4)");
    expect(r.stdout).toContain("calc_add  — Adds two numbers");
    expect(r.stdout).toContain("permission: asks depending on the arguments");
    expect(r.stderr).toBe("");
  });
});

describe("describe for people: each tool's arguments, the README's first paragraph and where the rest is", () => {
  test("the calculator, exactly", async () => {
    const r = await cli(["describe", "examples/calculator"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      [
        "  calc_add  — Adds two numbers and returns a + b.",
        "      permission: asks on every call",
        "      arguments: a  number  required  The first addend.",
        "                 b  number  required  The second addend.",
        "  calc_multiply  — Multiplies two numbers and returns a * b.",
      ].join("\n"),
    );
    const readme = readFileSync(join(CALCULATOR, "README.md"), "utf8");
    const lines = readme.split("\n").length - 1;
    expect(r.stdout).toEndWith(
      `\nExact arithmetic on two numbers for the agent: addition, multiplication and\ndivision. It is a small plugin, and also a complete one: each tool uses a\ndifferent kind of permission check, the text the model reads follows a\nsetting, and mistakes in the arguments come back as clear messages rather\nthan wrong answers.\n\nREADME: ${join(CALCULATOR, "README.md")} (${lines} lines; --readme prints it whole)\n`,
    );
    expect(r.stdout.split("\n").length).toBeLessThan(45);
  });

  test("--readme prints the whole README, rendered: headings underlined, code indented, no markup", async () => {
    const r = await cli(["describe", "examples/calculator", "--readme"]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("README: ");
    expect(r.stdout).not.toContain("```");
    expect(r.stdout).toMatch(/\nBuilding\n-+\n/);
  });

  test("a tool without properties, an enum, an array: each in words", async () => {
    await approve(fixture("typed-arguments"));
    const r = await cli(["describe", fixture("typed-arguments")]);
    expect(r.stdout).toContain("      arguments: n      integer          required  How many.\n                 ratio  number           optional\n                 flag   boolean          optional\n                 items  array of object  optional\n");
    expect(r.stdout).toContain("      arguments: when  one of now, later  required\n");
    expect(r.stdout).toContain("  names_itself  — Fails, naming itself.\n      permission: never asks\n      arguments: none\n");
  });
});

describe("invoke", () => {
  test("--json prints the normalized envelope", async () => {
    const r = await cli(["invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 6, "b": 7}', "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({
      ok: true,
      result: {
        success: true,
        exitCode: 0,
        errorMessage: null,
        permissionDenied: false,
        decidedBy: null,
        output: { content: "6 * 7 = 42", answer: 42 },
        logFile: null,
        durationMs: expect.any(Number),
      },
      error: null,
    });
  });

  test("without --json, stdout is only what the model would read", async () => {
    const r = await cli(["invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 6, "b": 7}']);
    expect(r).toMatchObject({ code: 0, stdout: "6 * 7 = 42\n", stderr: "" });
  });

  test("arguments from a file and from stdin", async () => {
    using dir = tempDir();
    const file = join(dir.path, "args.json");
    await Bun.write(file, '{"a": 3, "b": 5}');
    expect((await cli(["invoke", "examples/calculator", "calc_multiply", "--args-file", file])).stdout).toBe("3 * 5 = 15\n");
    expect((await cli(["invoke", "examples/calculator", "calc_multiply", "-"], { stdin: '{"a": 4, "b": 5}' })).stdout).toBe("4 * 5 = 20\n");
  });

  test("a tool reporting failure exits 1, its message on stderr", async () => {
    const r = await cli(["invoke", "examples/calculator", "calc_divide", "--args", '{"a": 1, "b": 0}', "--allow"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("Cannot divide 1 by zero.\n");
    expect(r.stderr).toContain("calc_divide failed: division by zero");
  });
});

describe("failures: one JSON document with --json, and the exit code of SPEC §9", () => {
  const cases: [string, string[], number, string, RegExp][] = [
    ["an unknown flag", ["invoke", "examples/calculator", "calc_multiply", "--bogus"], 2, "E_USAGE", /^unknown option '--bogus' for 'cxagent invoke'$/],
    ["a missing tool argument: its tools named (from the sidecar)", ["invoke", "examples/calculator"], 2, "E_USAGE", /^'cxagent invoke' needs <tool>: plugin 'calculator' has calc_add, calc_multiply, calc_divide$/],
    ["a missing tool and plugin", ["invoke"], 2, "E_USAGE", /^'cxagent invoke' needs <plugin>$/],
    ["no command", [], 2, "E_USAGE", /^no command given$/],
    ["an unknown command", ["frobnicate"], 2, "E_USAGE", /^unknown command 'frobnicate'$/],
    ["arguments that are not JSON", ["invoke", "examples/calculator", "calc_multiply", "--args", "{a:1}"], 3, "E_INVALID_INPUT", /^the arguments from --args are not valid JSON: /],
    ["arguments that are not an object", ["invoke", "examples/calculator", "calc_multiply", "--args", "[1,2]"], 3, "E_INVALID_INPUT", /^arguments for calc_multiply must be a JSON object, not an array$/],
    ["an unknown tool", ["invoke", "examples/calculator", "calc_power"], 3, "E_UNKNOWN_TOOL", /^plugin 'calculator' has no tool 'calc_power'$/],
    ["a plugin that does not exist", ["invoke", "/no/such/plugin.so", "x"], 3, "E_NOT_FOUND", /^no plugin at \/no\/such\/plugin\.so: nothing exists there$/],
    ["a refused handshake", ["invoke", fixture("handshake-99"), "handshake_99"], 5, "E_HANDSHAKE", /^plugin 'handshake-99' was refused: handshake refused: the plugin was built against contract 99/],
    ["a crash", ["invoke", fixture("crash-in-invoke"), "segfault"], 5, "E_CRASHED", /^plugin 'crash-in-invoke' crashed \(signal SIGSEGV\) while cxagent_plugin_invoke of segfault was running/],
    ["a malformed reply", ["invoke", fixture("invoke-replies"), "number"], 5, "E_BAD_REPLY", /^plugin 'invoke-replies': cxagent_plugin_invoke returned /],
    ["a deadline", ["invoke", fixture("slow-invoke"), "slow_invoke", "--timeout", "200"], 6, "E_TIMEOUT", /^plugin 'slow-invoke': cxagent_plugin_invoke of slow_invoke did not answer within 200 ms$/],
  ];
  test.each(cases)("%s", async (_what, args, code, errorCode, message) => {
    const r = await cli([...args, "--json"]);
    expect(r.code).toBe(code);
    const doc = r.json();
    const error = doc.error;
    expect(Object.keys(error).sort()).toEqual(["code", "details", "hint", "message", "next"]);
    expect(error.code).toBe(errorCode);
    expect(error.message).toMatch(message);
  });

  test("without --json the error goes to stderr with a hint, and stdout stays empty", async () => {
    const r = await cli(["invoke", "examples/calculator", "calc_power"]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("error plugin 'calculator' has no tool 'calc_power'\nhint: its tools: calc_add, calc_multiply, calc_divide\n");
  });
});

describe("help and version", () => {
  test("--help lists the commands; each command has its own", async () => {
    const top = await cli(["--help"]);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain("invoke");
    expect(top.stdout).not.toContain("__host");
    const invoke = await cli(["invoke", "--help"]);
    expect(invoke.code).toBe(0);
    for (const flag of ["--args", "--args-file", "--timeout", "--allow", "--jsonl", "--json"]) expect(invoke.stdout).toContain(flag);
  });

  test("every command has --help, naming its options", async () => {
    const commands = ["list", "describe", "approve", "revoke", "load", "invoke", "gate", "command", "watch", "instructions", "grants", "reap", "new"];
    const top = await cli(["--help"]);
    for (const name of commands) {
      expect(top.stdout).toContain(name);
      const r = await cli([name, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`cxagent ${name}`);
      expect(r.stdout).toContain("--json");
    }
  });

  test("--version prints the package version", async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(await cli(["--version"])).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  // `| head` and the like close their end early: the output just stops (it used to end in an
  // EPIPE stack trace and exit 1). `true` is gone long before cxagent has started.
  test.each([["--version"], ["--help"], ["list", "--json"]])("a reader that has gone: %s ends quietly with its own exit code", async (...args) => {
    const command = [process.execPath, join(ROOT, "src/main.ts"), ...args].map((a) => `'${a}'`).join(" ");
    const run = Bun.spawnSync(["bash", "-c", `${command} 2>"$0" | true; echo "\${PIPESTATUS[0]}"`, join(HOME, `epipe-${args[0]}.txt`)], {
      env: { ...process.env, CXAGENT_CONFIG_DIR: CONFIG_DIR, CXAGENT_STATE_DIR: STATE_DIR },
    });
    expect(run.stdout.toString().trim()).toBe("0");
    expect(readFileSync(join(HOME, `epipe-${args[0]}.txt`), "utf8")).toBe("");
  });
});

describe("the compiled binary", () => {
  let binary = "";
  beforeAll(async () => {
    const built = Bun.spawnSync([process.execPath, "scripts/compile.ts"], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
    if (built.exitCode !== 0) throw new Error(`compile failed: ${built.stderr}`);
  }, 120_000);

  test("copied alone to another folder, with no C compiler on PATH, describes and invokes the calculator", async () => {
    using dir = tempDir();
    binary = join(dir.path, "cxagent");
    copyFileSync(join(ROOT, "dist/cxagent"), binary);
    Bun.spawnSync(["chmod", "+x", binary]);
    const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path };
    const described = await cli(["describe", CALCULATOR, "--json"], { bin: [binary], cwd: dir.path, env });
    expect(described.code).toBe(0);
    expect(described.json().manifest).toEqual(calculatorManifest());
    const invoked = await cli(["invoke", CALCULATOR, "calc_multiply", "--args", '{"a": 6, "b": 7}', "--json"], { bin: [binary], cwd: dir.path, env });
    expect(invoked.code).toBe(0);
    expect(invoked.json().result.output).toEqual({ content: "6 * 7 = 42", answer: 42 });
  }, 30_000);

  test("starts a sandboxed plugin through the launcher it carries, written out once into the private folder, and refuses one swapped there", async () => {
    using dir = tempDir();
    const plugin = copyFixture("sandbox-probe", dir.path);
    await approve(plugin);
    const bin = [join(ROOT, "dist/cxagent")];
    const args = ["invoke", plugin, "try", "--args", JSON.stringify({ op: "read", path: "/etc/hostname" }), "--json"];
    const first = await cli(args, { bin, cwd: dir.path });
    expect(first.code).toBe(0);
    expect(first.json().result.output).toMatchObject({ errno: 13 }); // EACCES: the kernel stopped it
    const folder = join(RUNTIME_DIR, "cxagent");
    const written = readdirSync(folder).filter((name) => name.startsWith("sandbox-launcher-"));
    expect(written).toHaveLength(1);
    const launcher = join(folder, written[0]!);
    expect(statSync(launcher).mode & 0o777).toBe(0o500);
    expect(readFileSync(launcher).equals(readFileSync(join(ROOT, "ffi/build/cxagent-sandbox.bin")))).toBe(true);
    // Swapped for one that would start the host unconfined: refused, never run.
    chmodSync(launcher, 0o700);
    writeFileSync(launcher, '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n');
    try {
      const swapped = await cli(args, { bin, cwd: dir.path });
      expect(swapped.code).not.toBe(0);
      expect(swapped.json().error.code).toBe("E_SANDBOX");
      expect(swapped.json().error.message).toContain("is not the one this cxagent carries");
    } finally {
      rmSync(launcher, { force: true });
    }
  }, 30_000);

  test("where the private folder is mounted noexec, it still starts a sandboxed host confined: cxagent __sandbox does the launcher's work", async () => {
    using dir = tempDir();
    const plugin = copyFixture("sandbox-probe", dir.path);
    await approve(plugin);
    const noexec = join(RUNTIME_DIR, `noexec-${process.pid}`);
    mkdirSync(noexec, { mode: 0o700 });
    try {
      // In a mount namespace of its own: a tmpfs mounted noexec over the folder, for this command only.
      const cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount -t tmpfs -o noexec,mode=0700 tmpfs "$0" && exec "$@"', noexec, join(ROOT, "dist/cxagent")];
      const invoked = await cli(["invoke", plugin, "try", "--args", JSON.stringify({ op: "read", path: "/etc/hostname" }), "--json"], { bin: cmd, cwd: dir.path, env: { XDG_RUNTIME_DIR: noexec } });
      expect(invoked.stderr).toBe("");
      expect(invoked.json().result.output).toMatchObject({ errno: 13 }); // EACCES: confined all the same
    } finally {
      rmSync(noexec, { recursive: true, force: true });
    }
  }, 30_000);

  test("knows the libraries it links itself: a plugin needing only those loads despite an absolute RPATH outside its folder", async () => {
    // glibc matches libc.so.6 against what the plugin host has loaded and never searches the
    // RPATH; had the binary's own needs been wrong, that folder would be searched, and refused.
    using dir = tempDir();
    const plugin = copyFixture("rpath-host-only", dir.path);
    const env = { CXAGENT_STATE_DIR: join(dir.path, "state"), CXAGENT_CONFIG_DIR: join(dir.path, "config") };
    const bin = [join(ROOT, "dist/cxagent")];
    const hash = (await cli(["describe", plugin, "--json"], { bin, env })).json().hash;
    expect((await cli(["approve", plugin, "--hash", hash], { bin, env })).code).toBe(0);
    const invoked = await cli(["invoke", plugin, "echo_this", "--args", '{"x": 1}', "--json"], { bin, env });
    expect(invoked.stderr).toBe("");
    expect(invoked.code).toBe(0);
    expect(invoked.json().ok).toBe(true);
  }, 30_000);

  test("copied alone to another folder, with no C compiler on PATH, loads and calls a Cortex native plugin", async () => {
    using dir = tempDir();
    const copy = join(dir.path, "cxagent");
    copyFileSync(join(ROOT, "dist/cxagent"), copy);
    Bun.spawnSync(["chmod", "+x", copy]);
    const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path };
    const plugin = copyFixture("cortex-basic", dir.path);
    await approve(plugin);
    const echoed = await cli(["invoke", plugin, "echo", "--args", '{"from": "the binary"}', "--json"], { bin: [copy], cwd: dir.path, env });
    expect(echoed.code).toBe(0);
    expect(echoed.json().result.output).toEqual({ content: '{"from":"the binary"}', media: [] });
    const bad = await cli(["invoke", plugin, "malformed", "--args", '{"how": "empty"}', "--json"], { bin: [copy], cwd: dir.path, env });
    expect(bad.code).toBe(5);
    expect(bad.json().error.message).toContain("tool_execute returned an empty buffer");
  }, 30_000);

  test("copied alone to a machine's folder with no Bun and no C compiler on PATH, it runs the TypeScript calculator with the Bun inside it", async () => {
    using dir = tempDir();
    const copy = join(dir.path, "cxagent");
    copyFileSync(join(ROOT, "dist/cxagent"), copy);
    Bun.spawnSync(["chmod", "+x", copy]);
    mkdirSync(join(dir.path, "empty-bin"));
    const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path, CXAGENT_STATE_DIR: join(dir.path, "state") };
    const plugin = join(ROOT, "examples/calculator-ts");
    const hash = (await cli(["describe", plugin, "--json"], { bin: [copy], cwd: dir.path, env })).json().hash;
    expect((await cli(["approve", plugin, "--hash", hash], { bin: [copy], cwd: dir.path, env })).code).toBe(0);
    // Snapshots go in the private folder for them ($XDG_RUNTIME_DIR/cxagent here), never in $TMPDIR.
    const snapshots = () => (existsSync(join(RUNTIME_DIR, "cxagent")) ? readdirSync(join(RUNTIME_DIR, "cxagent")).filter((n) => n.startsWith("cxagent-module-")) : []);
    const before = snapshots();
    const invoked = await cli(["invoke", plugin, "calc_divide", "--args", '{"a": 22, "b": 7}', "--json"], { bin: [copy], cwd: dir.path, env });
    expect(invoked.stderr).toBe("");
    expect(invoked.code).toBe(0);
    expect(invoked.json().result.output).toEqual({ content: "22 / 7 = 3.1429", answer: 22 / 7 });
    // and the snapshot it imported from is gone with its plugin host
    expect(readdirSync(dir.path).filter((n) => n.startsWith("cxagent-module-"))).toEqual([]);
    expect(snapshots()).toEqual(before);
    // A module's output, process.stdout's included, is its log: never the protocol, also from the
    // binary (module-plugins.test.ts has a host touch process.stdout before it moves fd 1).
    const probe = join(ROOT, "test/fixtures/modules/probe");
    const probeHash = (await cli(["describe", probe, "--json"], { bin: [copy], cwd: dir.path, env })).json().hash;
    expect((await cli(["approve", probe, "--hash", probeHash], { bin: [copy], cwd: dir.path, env })).code).toBe(0);
    const noisy = await cli(["invoke", probe, "noisy", "--verbose"], { bin: [copy], cwd: dir.path, env });
    expect(noisy.stdout).toBe("noisy\n");
    for (const line of ["top-level stdout write", "process.stdout.write in a call", "Bun.write(Bun.stdout) in a call", "console.log in a call"]) expect(noisy.stderr).toContain(`[probe] ${line}`);
    expect(noisy.stderr).not.toContain("not JSON");
    expect(noisy.code).toBe(0);
  }, 30_000);

  test("copied alone to another folder, cxagent new writes the same project as from source: the templates are inside it", async () => {
    using dir = tempDir();
    const copy = join(dir.path, "cxagent");
    copyFileSync(join(ROOT, "dist/cxagent"), copy);
    Bun.spawnSync(["chmod", "+x", copy]);
    const env = { PATH: join(dir.path, "empty-bin"), HOME: dir.path, TMPDIR: dir.path };
    for (const lang of ["c", "rust", "ts"]) {
      const fromBinary = await cli(["new", "demo", "--lang", lang, "--dir", `binary-${lang}`, "--json"], { bin: [copy], cwd: dir.path, env });
      expect(fromBinary.code).toBe(0);
      const fromSource = await cli(["new", "demo", "--lang", lang, "--dir", `source-${lang}`, "--json"], { cwd: dir.path });
      expect(fromSource.code).toBe(0);
      const files: string[] = fromSource.json().files;
      expect(fromBinary.json().files).toEqual(files);
      for (const file of files) {
        expect(readFileSync(join(dir.path, `binary-${lang}`, file), "utf8")).toBe(readFileSync(join(dir.path, `source-${lang}`, file), "utf8"));
      }
    }
  }, 30_000);
});

describe("global options", () => {
  test("--config-dir and --state-dir replace the folders from the environment", async () => {
    using dir = tempDir();
    const config = join(dir.path, "my-config");
    const state = join(dir.path, "my-state");
    mkdirSync(join(config, "plugins"), { recursive: true });
    copyFixture("echo", join(config, "plugins"));
    const hash = await approve(join(config, "plugins", "echo"), state);
    const r = await cli(["invoke", "echo", "echo_this", "--config-dir", config, "--state-dir", state, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().result.output.content).toBe("echo_this: ok");
    const listed = await cli(["list", "--json", "--config-dir", config, "--state-dir", state]);
    expect(listed.json().plugins).toEqual([expect.objectContaining({ name: "echo", trust: "approved", hash })]);
  });

  test("a state folder that cannot be written is reported by path, with what to do", async () => {
    const hash = (await cli(["describe", "examples/calculator", "--json"])).json().hash;
    const r = await cli(["approve", "examples/calculator", "--hash", hash, "--state-dir", "/proc/no-such-folder", "--json"]);
    expect(r.code).toBe(3);
    expect(r.json().error).toMatchObject({ code: "E_STATE", message: expect.stringContaining("cannot write /proc/no-such-folder/approvals.json") });
    expect(r.json().error.hint).toContain("--state-dir");
  });

  test("--cwd names the project folder; one that does not exist is invalid input", async () => {
    const r = await cli(["list", "--cwd", "/no/such/folder", "--json"]);
    expect(r.code).toBe(3);
    expect(r.json().error.message).toContain("the project folder /no/such/folder does not exist");
  });
});

test("Ctrl-C on a terminal abandons the call: exit 130, and the plugin host is gone", async () => {
  const reporter = join(ROOT, "examples/reporter");
  await approve(reporter);
  const r = await tty(["invoke", reporter, "reporter_count", "--args", '{"to": 200, "delayMs": 50}'], [{ after: "counted to 2 of 200", send: "\x03" }]);
  expect(r.code).toBe(130);
  expect(r.output).toContain("the call to reporter_count was interrupted");
  await until(() => hostsOf(join(reporter, "reporter.so")).length === 0, 5000, "the plugin host to be gone");
});

describe("invoke says what a bare exit code would not", () => {
  test("a result without success: true exits 1 and says so on stderr; one without output.content is noted", async () => {
    using dir = tempDir();
    const plugin = writeModule(dir.path, "half-results", `
import { definePlugin } from "cxagent";
export default definePlugin({
  start() {}, stop() {},
  invoke(tool) { return (tool === "no_success" ? { output: { content: "hello" } } : { success: true, output: { lines: 3 } }) as never; },
});
`, { tools: [{ name: "no_success" }, { name: "no_content" }] });
    await approve(plugin);
    const failed = await cli(["invoke", plugin, "no_success"]);
    expect({ code: failed.code, stdout: failed.stdout, stderr: failed.stderr }).toEqual({ code: 1, stdout: "hello\n", stderr: 'no_success failed without an errorMessage: its result did not say "success": true\n' });
    const bare = await cli(["invoke", plugin, "no_content"]);
    expect(bare.code).toBe(0);
    expect(JSON.parse(bare.stdout)).toEqual({ lines: 3 });
    expect(bare.stderr).toBe("note: no_content's result has no output.content, the text a model reads; shown here as its output in JSON, which is what a model gets over MCP\n");
    // --json stays one document, with nothing on stderr
    expect((await cli(["invoke", plugin, "no_content", "--json"])).stderr).toBe("");
  });
});

test("invoke --verbose says on success what was loaded, from where, in how long, and how the call went", async () => {
  const r = await cli(["invoke", "examples/calculator", "calc_multiply", "--args", '{"a":6,"b":7}', "--verbose"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe("6 * 7 = 42\n");
  expect(r.stderr).toMatch(new RegExp(`^\\[verbose\\] loaded calculator 1\\.0\\.0 from ${join(CALCULATOR, "calculator.so").replace(/[.]/g, "\\.")} in [\\d.]+ ms \\(resolve [\\d.]+, .*trust [\\d.]+, spawn [\\d.]+, .*ms\\)\\n`, "m"));
  expect(r.stderr).toMatch(/^\[verbose\] calc_multiply answered in \d+ ms: success true, exit code 0$/m);
});

test("invoke --field key=value, repeatable, over --args; the schema makes numbers of them; a pair without = is a usage error", async () => {
  const pairs = await cli(["invoke", "examples/calculator", "calc_multiply", "--field", "a=6", "--field=b=7"]);
  expect({ code: pairs.code, out: pairs.stdout }).toEqual({ code: 0, out: "6 * 7 = 42\n" });
  const over = await cli(["invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 2, "b": 3}', "--field", "b=7"]);
  expect(over.stdout).toBe("2 * 7 = 14\n");
  const bad = await cli(["invoke", "examples/calculator", "calc_multiply", "--field", "a", "--json"]);
  expect(bad.code).toBe(2);
  expect(bad.json().error.message).toBe("--field takes key=value, not 'a'");
});

test("arguments piped in without '-' are not read, and invoke says so; with '-' they are", async () => {
  const piped = await cli(["invoke", "examples/calculator", "calc_multiply"], { stdin: '{"a": 6, "b": 7}' });
  expect(piped.code).toBe(3);
  expect(piped.stderr).toStartWith("note: stdin holds data, which invoke reads only when given '-' (invoke <plugin> <tool> -); calling with no arguments ({})\n");
  const read = await cli(["invoke", "examples/calculator", "calc_multiply", "-"], { stdin: '{"a": 6, "b": 7}' });
  expect({ code: read.code, out: read.stdout, err: read.stderr }).toEqual({ code: 0, out: "6 * 7 = 42\n", err: "" });
  // nothing on stdin: no note
  expect((await cli(["invoke", "examples/calculator", "calc_multiply", "--args", '{"a": 1, "b": 1}'], { stdin: "" })).stderr).toBe("");
});

test("list names a discovered plugin by its manifest's name, a TypeScript one as a native one", async () => {
  using dir = tempDir();
  const config = join(dir.path, "config");
  writeModule(join(config, "plugins"), "stem-ts", `export default { start() {}, invoke() { return { success: true, output: { content: "" } }; }, stop() {} };`, { name: "named-ts" });
  const r = await cli(["list", "--json"], { env: { CXAGENT_CONFIG_DIR: config, CXAGENT_STATE_DIR: join(dir.path, "state") } });
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout).plugins.map((p: { name: string; kind: string }) => [p.name, p.kind])).toEqual([["named-ts", "module"]]);
});
