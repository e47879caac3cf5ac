/**
 * A module plugin's trust (issue 19 point 3): no code of it runs before its folder is approved;
 * the code that runs — the module and every module it imports from its folder — is the bytes that
 * were hashed, served from memory, whatever happens to the folder on disk; an import from outside
 * the folder is refused, naming it, before any of it runs.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import { Session } from "../../src/index.ts";
import { alive, cli, refusal, ROOT, RUNTIME_DIR, tempDir, until, writeModule } from "../helpers.ts";
import { sweepSnapshots } from "../../src/host/child-transport.ts";
import { writeSnapshot } from "../../src/plugin-host/module-loader.ts";
import { inPidNamespace, PID_NAMESPACE } from "../isolation.ts";
import { holdSession } from "../processes.ts";

function isolated(dir: string, env: Record<string, string> = {}, confirm: boolean | null = null) {
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "project"), { recursive: true });
  return Session.open({
    cwd: join(dir, "project"),
    configDir: join(dir, "config"),
    stateDir: join(dir, "state"),
    confirmTrust: confirm === null ? null : async () => confirm,
    env,
  });
}

const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").trim().split("\n") : []);
const MARK = `import { appendFileSync } from "node:fs";\nconst mark = (text: string) => appendFileSync(process.env.CXAGENT_FX_MARKER!, text + "\\n");\n`;

/** The --snapshot folder on a plugin host's command line. */
function snapshotOf(pid: number): string {
  const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  return args[args.indexOf("--snapshot") + 1]!;
}

describe("a module plugin's code runs only as approved", () => {
  test("before approval, none of it runs: its top-level code included", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const folder = writeModule(dir.path, "unapproved", `${MARK}mark("top-level ran");\nexport default { start() {}, invoke() { return {}; }, stop() {} };`);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker });
    const error = await refusal(session.load(folder));
    expect(error.code).toBe("E_NOT_APPROVED");
    expect(existsSync(marker)).toBe(false);
    // the CLI without a terminal: the same, with the command that approves it
    const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state"), CXAGENT_FX_MARKER: marker };
    const r = await cli(["invoke", folder, "work", "--json"], { env });
    expect(r.code).toBe(4);
    expect(r.json().error.code).toBe("E_NOT_APPROVED");
    expect(existsSync(marker)).toBe(false);
  });

  test("an import from outside its folder is refused at load, naming the file, and it never runs", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    writeFileSync(join(dir.path, "outside.ts"), `${MARK}mark("outside ran");\nexport const x = 1;`);
    const relative = writeModule(dir.path, "relative", `import { x } from "../outside.ts";\nexport default { start() {}, invoke() { return { success: true, output: { x } }; }, stop() {} };`);
    const absolute = writeModule(dir.path, "absolute", `import { x } from ${JSON.stringify(join(dir.path, "outside.ts"))};\nexport default { start() {}, invoke() { return { success: true, output: { x } }; }, stop() {} };`);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    // by a path relative to it: its private copy has nothing beside it
    const byRelative = await refusal(session.load(relative));
    expect(byRelative.code).toBe("E_LOAD");
    expect(byRelative.message).toContain(`Cannot find module '../outside.ts' imported from ${join(relative, "relative.ts")}`);
    expect(byRelative.message).toContain("files outside it, and packages that are not in its node_modules cannot be imported");
    // by its absolute path: found, and refused before it runs
    const byPath = await refusal(session.load(absolute));
    expect(byPath.code).toBe("E_LOAD");
    expect(byPath.message).toContain(`the plugin imports ${join(dir.path, "outside.ts")}, which is outside its folder ${absolute}: a module plugin may import only the files of its own folder`);
    expect(existsSync(marker)).toBe(false);
  });

  test("a package its folder lacks is refused, never fetched; 'cxagent' offers the plugin API only", async () => {
    using dir = tempDir();
    const pkg = writeModule(dir.path, "no-package", `import pad from "left-pad-that-is-not-here";\nexport default { start() {}, invoke() { return { output: { pad } }; }, stop() {} };`);
    const session_ = writeModule(dir.path, "wants-session", `import { Session } from "cxagent";\nexport default { start() {}, invoke() { return { success: true, output: { s: typeof Session } }; }, stop() {} };`);
    await using session = await isolated(dir.path, {}, true);
    const missing = await refusal(session.load(pkg));
    expect(missing.code).toBe("E_LOAD");
    expect(missing.message).toContain("Cannot find package 'left-pad-that-is-not-here'");
    expect(missing.message).toContain("packages that are not in its node_modules cannot be imported");
    const api = await refusal(session.load(session_));
    expect(api.code).toBe("E_LOAD");
    expect(api.message).toContain("Session");
  });

  test("imports from its folder — relative files, packages (ESM by exports, CommonJS by main), JSON, .cjs — load from the approved bytes, also after the folder changes on disk", async () => {
    using dir = tempDir();
    const folder = writeModule(
      dir.path,
      "packages",
      [
        `import esm from "esm-pkg";`,
        `import cjs, { twice } from "cjs-pkg";`,
        `import data from "./data.json";`,
        `import local from "./local.cjs";`,
        `import { helper } from "./lib/helper";`,
        `export default {`,
        `  start() {},`,
        `  async invoke(tool: string) {`,
        `    if (tool === "lazy") return { success: true, output: { lazy: (await import("./lazy.ts")).lazy } };`,
        `    return { success: true, output: { esm, cjs: cjs.name, twice: twice(21), data: data.value, local: local.value, helper: helper() } };`,
        `  },`,
        `  stop() {},`,
        `};`,
      ].join("\n"),
      { tools: [{ name: "work" }, { name: "lazy" }] },
    );
    const files: Record<string, string> = {
      "node_modules/esm-pkg/package.json": JSON.stringify({ name: "esm-pkg", exports: { ".": { import: "./esm.mjs", require: "./no.cjs" } } }),
      "node_modules/esm-pkg/esm.mjs": `export default "esm approved";`,
      "node_modules/cjs-pkg/package.json": JSON.stringify({ name: "cjs-pkg", main: "lib/index.js" }),
      "node_modules/cjs-pkg/lib/index.js": `const { double } = require("./double.js");\nconst meta = require("../meta.json");\nmodule.exports = { name: meta.name + " approved", twice: double };`,
      "node_modules/cjs-pkg/lib/double.js": `exports.double = (n) => n * 2;`,
      "node_modules/cjs-pkg/meta.json": JSON.stringify({ name: "cjs" }),
      "data.json": JSON.stringify({ value: "data approved" }),
      "local.cjs": `module.exports = { value: "cjs file approved" };`,
      "lib/helper.ts": `export const helper = () => "helper approved";`,
      "lazy.ts": `export const lazy = "lazy approved";`,
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(folder, path, ".."), { recursive: true });
      writeFileSync(join(folder, path), text);
    }
    await using session = await isolated(dir.path, {}, true);
    const plugin = await session.load(folder);
    expect((await plugin.invoke("work")).output).toEqual({ esm: "esm approved", cjs: "cjs approved", twice: 42, data: "data approved", local: "cjs file approved", helper: "helper approved" });
    // After the load, every file in the folder on disk changes: what the plugin imports does not.
    for (const path of Object.keys(files)) writeFileSync(join(folder, path), path.endsWith(".json") ? '{"value":"changed"}' : `throw new Error("changed on disk");`);
    expect((await plugin.invoke("lazy")).output).toEqual({ lazy: "lazy approved" });
  });

  test("a dynamic import from outside, at call time, fails that call, naming the file; the plugin goes on", async () => {
    using dir = tempDir();
    const outside = join(dir.path, "outside.ts");
    writeFileSync(outside, `export const x = "outside";`);
    const folder = writeModule(dir.path, "dynamic", `export default { start() {}, async invoke(tool: string, args: { path?: string }) { if (args.path) await import(args.path); return { success: true, output: { content: "fine" } }; }, stop() {} };`);
    await using session = await isolated(dir.path, {}, true);
    const plugin = await session.load(folder);
    const error = await refusal(plugin.invoke("work", { path: outside }));
    expect(error.code).toBe("E_PLUGIN_FAILED");
    expect(error.message).toContain(`the plugin imports ${outside}, which is outside its folder`);
    expect((await plugin.invoke("work")).output.content).toBe("fine");
  });

  test("a file the plugin writes into its own snapshot, or beside it, is not approved: importing it fails that call, and it never runs", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const code = `import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
export default {
  start() {},
  async invoke(tool: string, args: { rel: string }) {
    const path = join(import.meta.dir, args.rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, 'import { appendFileSync } from "node:fs"; appendFileSync(process.env.CXAGENT_FX_MARKER!, "late ran\\n"); export const x = 1;');
    await import(path);
    return { success: true, output: { content: "imported" } };
  },
  stop() {},
};`;
    const folder = writeModule(dir.path, "writes", code);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    const plugin = await session.load(folder);
    const unapproved = await refusal(plugin.invoke("work", { rel: "late.ts" }));
    expect(unapproved.message).toContain(`the plugin imports ${join(folder, "late.ts")}, which is not among the files that were approved`);
    // <snapshot>/plugin-evil/ is beside the plugin's files (<snapshot>/plugin/), not inside them
    const beside = await refusal(plugin.invoke("work", { rel: "../plugin-evil/late.ts" }));
    // (messages write the snapshot's plugin/ as the plugin's folder, so its sibling shows as one of the folder's)
    expect(beside.message).toContain(`the plugin imports ${folder}-evil/late.ts, which is outside its folder ${folder}:`);
    expect(existsSync(marker)).toBe(false);
  });

  test.each(["../escape.ts", "sub/../../escape.ts", "..", "/abs/escape.ts", "sub//x.ts", "./x.ts", "sub/.", ""])("an archive naming %p is refused by the plugin host before it writes that file", (rel) => {
    using dir = tempDir();
    const snapshot = join(dir.path, "snap");
    mkdirSync(snapshot, { mode: 0o700 });
    const bytes = new TextEncoder().encode("export const x = 1;");
    for (const archive of [
      { folder: "/plugins/p", entry: "p.ts", files: new Map([["p.ts", bytes], [rel, bytes]]), links: new Map<string, string>() },
      { folder: "/plugins/p", entry: "p.ts", files: new Map([["p.ts", bytes]]), links: new Map([[rel, "p.ts"]]) },
    ]) {
      rmSync(snapshot, { recursive: true, force: true });
      mkdirSync(snapshot, { mode: 0o700 });
      expect(() => writeSnapshot(snapshot, archive)).toThrow(`the module archive names a path outside the plugin's folder: ${rel}`);
      expect(existsSync(join(dir.path, "escape.ts"))).toBe(false);
      expect(existsSync(join(snapshot, "escape.ts"))).toBe(false);
    }
  });

  test("a symbolic link inside its folder to a file inside it loads that file's approved bytes", async () => {
    using dir = tempDir();
    const folder = writeModule(dir.path, "linked", `import { x } from "./alias.ts";\nexport default { start() {}, invoke() { return { success: true, output: { x } }; }, stop() {} };`);
    writeFileSync(join(folder, "real.ts"), `export const x = "through the link";`);
    symlinkSync("real.ts", join(folder, "alias.ts"));
    await using session = await isolated(dir.path, {}, true);
    expect((await (await session.load(folder)).invoke("work")).output.x).toBe("through the link");
  });

  test("swapping a module it imports during 50 loads never runs bytes that were not approved", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const greeting = (word: string) => `${MARK}mark("greeting ${word}");\nexport const greeting = "${word}";\n`;
    const folder = writeModule(dir.path, "swap", `${MARK}import { greeting } from "./greeting.ts";\nmark("plugin");\nexport default { start() {}, invoke() { return { success: true, output: { content: greeting } }; }, stop() {} };`);
    writeFileSync(join(folder, "greeting.ts"), greeting("approved"));
    const approved = join(dir.path, "approved.ts");
    const swapped = join(dir.path, "swapped.ts");
    copyFileSync(join(folder, "greeting.ts"), approved);
    writeFileSync(swapped, greeting("swapped"));
    {
      await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: join(dir.path, "first") }, true); // a person approves it as written
      await session.load(folder);
    }
    const swapper = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/swap-file.ts"), join(folder, "greeting.ts"), approved, swapped], { stdout: "pipe", stderr: "inherit" });
    const out = swapper.stdout.getReader();
    expect(new TextDecoder().decode((await out.read()).value)).toBe("swapping\n");
    let ran = 0;
    const refused = new Map<string, number>();
    try {
      await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }); // nobody to ask: only the approved load set loads
      for (let i = 0; i < 50; i++) {
        try {
          const loaded = await session.load(folder);
          expect((await loaded.invoke("work")).output.content).toBe("approved");
          await session.unload(loaded.name);
          ran++;
        } catch (error) {
          if (!isCxError(error)) throw error;
          refused.set(error.code, (refused.get(error.code) ?? 0) + 1);
        }
      }
    } finally {
      swapper.kill("SIGTERM");
    }
    const swaps = Number(new TextDecoder().decode((await out.read()).value).trim());
    await swapper.exited;
    expect(swaps).toBeGreaterThan(50);
    // every load either ran the approved bytes or was refused as changed (or torn mid-rewrite)
    expect([...refused.keys()].filter((code) => code !== "E_NOT_APPROVED" && code !== "E_LOAD")).toEqual([]);
    expect(ran).toBeGreaterThan(0);
    expect(ran + [...refused.values()].reduce((a, b) => a + b, 0)).toBe(50);
    const marks = lines(marker);
    expect(marks.filter((m) => m !== "plugin" && m !== "greeting approved")).toEqual([]);
    expect(marks.filter((m) => m === "greeting approved").length).toBe(ran);
    expect(marks.filter((m) => m === "plugin").length).toBe(ran);
  }, 120_000);

  test("the snapshot it imports from is private (0700, this user's) and removed when its plugin host ends, even by SIGKILL", async () => {
    using dir = tempDir();
    const folder = writeModule(dir.path, "snapshot", `export default { start() {}, invoke() { return { success: true, output: { dir: import.meta.dir } }; }, stop() {} };`);
    await using session = await isolated(dir.path, {}, true);
    const plugin = await session.load(folder);
    const snapshot = snapshotOf(plugin.pid!);
    const stat = statSync(snapshot);
    expect(stat.mode & 0o777).toBe(0o700);
    expect(stat.uid).toBe(process.getuid!());
    expect((await plugin.invoke("work")).output.dir).toBe(join(snapshot, "plugin"));
    process.kill(plugin.pid!, "SIGKILL");
    await until(() => !existsSync(snapshot), 10_000, "the killed host's snapshot to be removed");
    const again = snapshotOf((await plugin.invoke("work"), plugin.pid!));
    expect(again).not.toBe(snapshot);
    await session.unload(plugin.name);
    expect(existsSync(again)).toBe(false);
    rmSync(folder, { recursive: true });
  });

  test("after kill -9 of the session its plugin host ends, and its snapshot is gone by the next session's start", async () => {
    using dir = tempDir();
    using session = await holdSession(join(dir.path, "state"), [join(ROOT, "test/fixtures/modules/probe")]);
    const { proc, hosts } = session;
    const host = hosts[0]!;
    const snapshot = snapshotOf(host);
    // in the private folder for snapshots ($XDG_RUNTIME_DIR/cxagent here), not the shared /tmp
    expect(snapshot).toStartWith(join(RUNTIME_DIR, "cxagent", `cxagent-module-${proc.pid}.`));
    expect(existsSync(join(snapshot, "plugin", "probe.ts"))).toBe(true);
    proc.kill("SIGKILL");
    await proc.exited;
    await until(() => !alive(host), 10_000, "the orphaned plugin host to end");
    // The host removes it itself when it notices first; else the next session does.
    await using next = await isolated(dir.path);
    expect(existsSync(snapshot)).toBe(false);
    expect(next.plugins).toEqual([]);
  });

  test("a snapshot whose maker is gone and left no session record: a session's start leaves it, cxagent reap removes it", async () => {
    using dir = tempDir();
    const runtime = mkdtempSync(join(RUNTIME_DIR, "runtime-"));
    const tmp = join(runtime, "cxagent");
    mkdirSync(tmp, { mode: 0o700 });
    // the folder a module's host would have had from a parent that is gone (its pid and start time)
    const gone = Bun.spawn(["true"]);
    await gone.exited;
    const start = readFileSync(`/proc/${process.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19]!;
    const snapshot = join(tmp, `cxagent-module-${gone.pid}.${start}-abcdef`);
    mkdirSync(join(snapshot, "plugin"), { recursive: true, mode: 0o700 });
    const env = { XDG_RUNTIME_DIR: runtime, CXAGENT_STATE_DIR: join(dir.path, "state") };
    // no record of a dead session: Session.open does not read the snapshots' folder
    expect((await cli(["list", "--json"], { env })).code).toBe(0);
    expect(existsSync(snapshot)).toBe(true);
    expect((await cli(["reap", "--dry-run", "--json"], { env })).code).toBe(0);
    expect(existsSync(snapshot)).toBe(true);
    expect((await cli(["reap", "--json"], { env })).code).toBe(0);
    expect(existsSync(snapshot)).toBe(false);
    rmSync(runtime, { recursive: true, force: true });
  });

  test.skipIf(!PID_NAMESPACE)("a sweep in another pid namespace leaves a live cxagent's snapshot, and removes a dead one's", async () => {
    using dir = tempDir();
    const runtime = mkdtempSync(join(RUNTIME_DIR, "runtime-"));
    const tmp = join(runtime, "cxagent");
    using session = await holdSession(join(dir.path, "state"), [join(ROOT, "test/fixtures/modules/probe")], { XDG_RUNTIME_DIR: runtime });
    const { proc, hosts } = session;
    try {
      const live = snapshotOf(hosts[0]!);
      expect(live).toStartWith(join(tmp, `cxagent-module-${proc.pid}.`));
      // a folder whose maker is gone: this namespace's /proc and the lock agree
      const dead = join(tmp, `cxagent-module-${proc.pid + 1_000_000}.1-abcdef`);
      mkdirSync(join(dead, "plugin"), { recursive: true, mode: 0o700 });
      // Inside, /proc shows no process with the live maker's pid (or another one): only its lock tells.
      const r = await inPidNamespace(`$CX reap --json >/dev/null; echo "exit $?"`, { XDG_RUNTIME_DIR: runtime, CXAGENT_STATE_DIR: join(dir.path, "state-inside") });
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe("exit 0\n");
      expect(existsSync(join(live, "plugin", "probe.ts"))).toBe(true);
      expect(existsSync(dead)).toBe(false);
    } finally {
      proc.kill("SIGKILL");
      await proc.exited;
      rmSync(runtime, { recursive: true, force: true });
    }
  });

  test("a snapshot whose name says its maker is gone is kept while a process holds its lock", async () => {
    using dir = tempDir();
    const tmp = join(dir.path, "tmp");
    const snapshot = join(tmp, `cxagent-module-${2 ** 22 + 7}.1-abcdef`);
    mkdirSync(join(snapshot, "plugin"), { recursive: true, mode: 0o700 });
    // util-linux flock(1) holds flock(2) on the folder while its command runs (--close: it alone)
    const holder = Bun.spawn(["flock", "--exclusive", "--close", snapshot, "sh", "-c", "echo locked; exec sleep 60"], { stdout: "pipe", stderr: "inherit" });
    try {
      const reader = holder.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("locked\n");
      expect(sweepSnapshots(tmp)).toEqual([]);
      expect(existsSync(join(snapshot, "plugin"))).toBe(true);
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
    expect(sweepSnapshots(tmp)).toEqual([snapshot]);
    expect(existsSync(snapshot)).toBe(false);
  });

  test("after kill -9 of the session, what its plugin started goes with its plugin host's group", async () => {
    using dir = tempDir();
    const folder = writeModule(
      dir.path,
      "starts-one",
      `export default { start() {}, invoke() { const child = Bun.spawn(["sleep", "60"], { stdio: ["ignore", "ignore", "ignore"] }); return { success: true, output: { pids: [child.pid] } }; }, stop() {} };`,
      { spawns: true },
    );
    using session = await holdSession(join(dir.path, "state"), [folder]);
    const { proc, hosts, children } = session;
    expect(children).toHaveLength(1);
    expect(alive(children[0]!)).toBe(true);
    proc.kill("SIGKILL");
    await proc.exited;
    await until(() => !alive(hosts[0]!) && !alive(children[0]!), 10_000, "the plugin host and its child to end with the session");
  });
});
