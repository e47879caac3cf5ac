/**
 * The one-line install, as a user on a machine with Node.js and the npm registry does it: `npm
 * pack` of this checkout, then `npm install -g ./cxagent-<v>.tgz` into a throwaway prefix and
 * `npm install ./cxagent-<v>.tgz` into a throwaway project. The installed command runs from an
 * unrelated folder, with a PATH that holds no Bun and nothing of this checkout; the library is
 * imported by its package name under Bun and type-checked with the project's own tsc.
 *
 * npm uses its cache first (--prefer-offline): the packages `npm ci` fetched for this checkout
 * are the ones the tarball asks for, so no download is needed where the cache is warm.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { CALCULATOR, ROOT, tempDir } from "../helpers.ts";

const dir = tempDir("cxagent-install-");
const tarball = join(dir.path, `cxagent-${pkg.version}.tgz`);
const prefix = join(dir.path, "prefix");
const project = join(dir.path, "project");
const elsewhere = join(dir.path, "elsewhere");
const npm = Bun.which("npm");
/**
 * The user's environment (proxy, certificates, npm's cache in HOME) without what ties it to this
 * checkout or to a Bun: no npm_* or INIT_CWD of an `npm test` around us, no BUN_* and no folder
 * on PATH that holds a `bun`. npm's global config is named outright, since --prefix would move it.
 */
const globalconfig = npm ? Bun.spawnSync([npm, "config", "get", "globalconfig"]).stdout.toString().trim() : "";
const PATH = (process.env.PATH ?? "/usr/bin:/bin").split(":").filter((d) => d && !d.includes("node_modules") && !existsSync(join(d, "bun"))).join(":");
const env = (extra: Record<string, string> = {}): Record<string, string> => {
  const kept = Object.entries(process.env).filter(([k]) => !/^(npm_|INIT_CWD$|BUN_|CXAGENT_)/i.test(k) && k !== "PATH") as [string, string][];
  return {
    ...Object.fromEntries(kept),
    PATH,
    ...(globalconfig && globalconfig !== "undefined" ? { npm_config_globalconfig: globalconfig } : {}),
    CXAGENT_CONFIG_DIR: join(dir.path, "config"),
    CXAGENT_STATE_DIR: join(dir.path, "state"),
    ...extra,
  };
};

function run(cmd: string[], cwd: string, extra: Record<string, string> = {}) {
  const p = Bun.spawnSync(cmd, { cwd, env: env(extra), stdout: "pipe", stderr: "pipe" });
  const result = { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  return { ...result, json: () => JSON.parse(result.stdout) };
}

function npmRun(args: string[], cwd: string) {
  const r = run([npm!, ...args, "--prefer-offline", "--no-audit", "--no-fund"], cwd);
  if (r.code !== 0) throw new Error(`npm ${args.join(" ")} failed (${r.code}):\n${r.stderr}`);
  return r;
}

let globalInstall = "";

beforeAll(() => {
  if (!npm) throw new Error("npm is not on PATH: this test installs the package with it");
  for (const d of [prefix, project, elsewhere]) mkdirSync(d, { recursive: true });
  npmRun(["pack", ROOT, "--pack-destination", dir.path, "--silent"], dir.path);
  globalInstall = npmRun(["install", "-g", "--prefix", prefix, tarball], dir.path).stderr;
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // --ignore-scripts, as pnpm does by default: nothing of cxagent's needs an install script.
  npmRun(["install", "--ignore-scripts", tarball, `typescript@${pkg.devDependencies.typescript}`, `@types/bun@${pkg.devDependencies["@types/bun"]}`], project);
}, 240_000);

afterAll(() => dir[Symbol.dispose]());

test("the tarball carries what the command needs at run time, and nothing of the checkout's tests", () => {
  const listed = Bun.spawnSync(["tar", "tzf", tarball]).stdout.toString().split("\n").filter(Boolean);
  for (const f of ["package/bin/cxagent", "package/src/main.ts", "package/ffi/cxagent_plugin.h", "package/ffi/shim/99-api.c", "package/types/index.d.ts", "package/bunfig.toml"]) expect(listed).toContain(f);
  expect(listed.filter((f) => /^package\/(test|scripts|examples|dist)\//.test(f))).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(prefix, "lib/node_modules/cxagent/package.json"), "utf8"));
  expect(manifest.private).toBeUndefined();
  // Bun comes as the registry's binary package for the platform; no install script runs for it.
  expect(Object.keys(manifest.optionalDependencies)).toContain("@oven/bun-linux-x64");
  expect(Object.keys(manifest.dependencies)).not.toContain("bun");
  expect(Object.keys(manifest.scripts).filter((s) => /^(pre|post)?(install|prepare)$/.test(s))).toEqual([]);
  // npm's warnings about install scripts it would not run (npm 11) and engines: none.
  expect(globalInstall).not.toMatch(/install-scripts|EBADENGINE/);
});

test("README's first command installs this version's tarball", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  expect(readme.slice(0, readme.indexOf("## Two commands"))).toContain(`npm install -g ./cxagent-${pkg.version}.tgz`);
});

test("npm install -g: cxagent describes, approves and invokes a native and a TypeScript plugin from an unrelated folder", () => {
  const cxagent = join(prefix, "bin/cxagent");
  expect(run([cxagent, "--version"], elsewhere).stdout.trim()).toBe(pkg.version);
  cpSync(CALCULATOR, join(elsewhere, "calculator"), { recursive: true });
  cpSync(join(ROOT, "examples/calculator-ts"), join(elsewhere, "calculator-ts"), { recursive: true });
  for (const name of ["calculator", "calculator-ts"]) {
    const described = run([cxagent, "describe", name, "--json"], elsewhere);
    expect(described.code).toBe(0);
    expect(described.json()).toMatchObject({ name, trust: "new" });
    expect(run([cxagent, "invoke", name, "calc_multiply", "--args", '{"a": 6, "b": 7}'], elsewhere).code).toBe(4);
    const approved = run([cxagent, "approve", name, "--hash", described.json().hash, "--json"], elsewhere);
    expect(approved.code).toBe(0);
    const called = run([cxagent, "invoke", name, "calc_multiply", "--args", '{"a": 6, "b": 7}', "--json"], elsewhere);
    expect({ code: called.code, stderr: called.stderr }).toEqual({ code: 0, stderr: "" });
    expect(called.json()).toMatchObject({ ok: true, result: { success: true, output: { content: "6 * 7 = 42", answer: 42 } } });
  }
}, 120_000);

test("npm install -g: cxagent mcp serves an approved plugin to an MCP client", async () => {
  const transport = new StdioClientTransport({ command: join(prefix, "bin/cxagent"), args: ["mcp", "calculator"], cwd: elsewhere, env: env(), stderr: "pipe" });
  const client = new Client({ name: "install-test", version: "1" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("calc_multiply");
    const result = await client.callTool({ name: "calc_multiply", arguments: { a: 6, b: 7 } });
    expect(result).toMatchObject({ isError: false, content: [{ type: "text", text: "6 * 7 = 42" }] });
  } finally {
    await client.close();
  }
}, 60_000);

test("npm install in a project: `import { Session } from \"cxagent\"` runs under Bun and type-checks with the project's tsc", () => {
  const script = join(project, "script.ts");
  writeFileSync(script, [
    'import { CxError, Session, type JobResult } from "cxagent";',
    `await using session = await Session.open({ confirmTrust: async () => true });`,
    `const calc = await session.load(${JSON.stringify(join(elsewhere, "calculator-ts"))});`,
    'const result: JobResult = await calc.invoke("calc_add", { a: 2, b: 3 }, { permission: async () => "once" });',
    "console.log(JSON.stringify(result.output), CxError.name);",
    "",
  ].join("\n"));
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions: { target: "ESNext", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["bun"], skipLibCheck: false }, files: ["script.ts"] }));
  const ran = run([process.execPath, "script.ts"], project);
  expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
  expect(ran.stdout).toBe('{"content":"2 + 3 = 5","answer":5} CxError\n');
  const tsc = run([join(project, "node_modules/.bin/tsc"), "-p", project, "--pretty", "false"], project);
  expect({ code: tsc.code, errors: tsc.stdout }).toEqual({ code: 0, errors: "" });
  // The project's own `cxagent` command runs with the Bun the dependency brought.
  expect(run([join(project, "node_modules/.bin/cxagent"), "--version"], project).stdout.trim()).toBe(pkg.version);
  expect(existsSync(join(project, "node_modules/cxagent/src/index.ts"))).toBe(true);
}, 120_000);

test("npm install in a project that also has the bun package: its postinstall moves Bun's binary out of @oven/…, and cxagent finds it in bun/", () => {
  const both = join(dir.path, "with-bun");
  mkdirSync(both);
  writeFileSync(join(both, "package.json"), JSON.stringify({ name: "with-bun", private: true, type: "module" }));
  npmRun(["install", tarball, `bun@${pkg.devDependencies.bun}`], both);
  // npm 11.19 runs bun's postinstall (warning that allowScripts does not cover it yet); one that did not leaves the binary in @oven/.
  if (existsSync(join(both, "node_modules/@oven/bun-linux-x64/bin/bun"))) console.error("install.test: bun's postinstall did not run here; the bun/ fallback was not exercised");
  const cxagent = run([join(both, "node_modules/.bin/cxagent"), "--version"], both);
  expect({ code: cxagent.code, out: cxagent.stdout.trim(), err: cxagent.stderr }).toEqual({ code: 0, out: pkg.version, err: "" });
}, 120_000);

