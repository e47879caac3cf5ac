/**
 * Per-call sandbox leases (issue 39 point 6): a "dynamic" gate answers a narrower `sandbox` for
 * one call; the call is served by a plugin host started with exactly that lease (intersected
 * with the plugin's effective sandbox), pooled by lease and stopped when idle; a lease that
 * would widen anything refuses the call; the question shows the lease. A real TypeScript plugin
 * in real sandboxed hosts, its writes attempted for real.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/index.ts";
import type { PermissionRequest } from "../../src/host/gate.ts";
import { checkPlugin } from "../../src/check/run.ts";
import { alive, approve, openSession, refusal, tempDir, until, writeModule } from "../helpers.ts";

const CODE = `
import { writeFileSync } from "node:fs";
export default {
  start() {},
  stop() {},
  gate(_tool: string, args: { path: string; lease?: unknown }) {
    return { display: "write " + args.path, ...(args.lease === undefined ? {} : { sandbox: args.lease }) };
  },
  invoke(_tool: string, args: { path: string }) {
    try {
      writeFileSync(args.path, "report\\n");
      return { success: true, output: { errno: "", pid: process.pid } };
    } catch (e) {
      return { success: true, output: { errno: (e as { code?: string }).code ?? String(e), pid: process.pid } };
    }
  },
};`;

async function world(dir: string, idleMs = 30_000) {
  const cwd = join(dir, "project");
  mkdirSync(join(cwd, "out"), { recursive: true });
  // A lease grants what exists when its host starts: the report file is there already, as is its sibling.
  writeFileSync(join(cwd, "out/report.md"), "");
  writeFileSync(join(cwd, "out/sibling.md"), "");
  const folder = writeModule(dir, "leaser", CODE, { tools: [{ name: "write", gated: "dynamic", inputSchema: { type: "object" } }], sandbox: { fs: { write: ["${project}/out"] }, net: "none" } });
  const configDir = join(dir, "config");
  const stateDir = join(dir, "state");
  mkdirSync(configDir);
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { leaser: { file: "leaser.ts", path: folder, idleMs } } }));
  await approve(folder, stateDir);
  return { cwd, open: () => Session.open({ configDir, stateDir, cwd, permission: "once" }) };
}

const REPORT_LEASE = { fs: { write: ["${project}/out/report.md"] } };
type Written = { errno: string; pid: number };

test("under a lease, a write to the leased file works and a write to its sibling in the declared folder fails; without one, the sibling is writable", async () => {
  using dir = tempDir();
  const w = await world(dir.path);
  await using session = await w.open();
  const plugin = await session.load("leaser");
  const write = async (path: string, lease?: object) => (await plugin.invoke("write", { path: join(w.cwd, path), ...(lease ? { lease } : {}) })).output as Written;
  const report = await write("out/report.md", REPORT_LEASE);
  expect(report.errno).toBe("");
  expect(readFileSync(join(w.cwd, "out/report.md"), "utf8")).toBe("report\n");
  const sibling = await write("out/sibling.md", REPORT_LEASE);
  expect(sibling.errno).toBe("EACCES");
  // Both leased calls ran on one host of their own, not the plugin's.
  expect(sibling.pid).toBe(report.pid);
  expect(report.pid).not.toBe(plugin.pid);
  const unleased = await write("out/sibling.md");
  expect(unleased).toEqual({ errno: "", pid: plugin.pid! });
  // The plugin's stop ends its leased hosts too.
  await session.close();
  expect(alive(report.pid)).toBe(false);
});

test("a plugin that declares no sandbox: its lease alone confines the call", async () => {
  using dir = tempDir();
  const cwd = join(dir.path, "project");
  mkdirSync(join(cwd, "out"), { recursive: true });
  writeFileSync(join(cwd, "out/report.md"), "");
  writeFileSync(join(cwd, "out/sibling.md"), "");
  const folder = writeModule(dir.path, "free-leaser", CODE, { tools: [{ name: "write", gated: "dynamic", inputSchema: { type: "object" } }] });
  await approve(folder);
  await using session = await openSession({ cwd, permission: "once" });
  const plugin = await session.load(folder);
  expect(plugin.sandboxLayers).toBeNull();
  const write = async (path: string) => (await plugin.invoke("write", { path: join(cwd, path), lease: REPORT_LEASE })).output as Written;
  expect((await write("out/report.md")).errno).toBe("");
  expect((await write("out/sibling.md")).errno).toBe("EACCES");
});

test("a lease that would widen anything refuses the call, naming each entry; nothing is written", async () => {
  using dir = tempDir();
  const w = await world(dir.path);
  await using session = await w.open();
  const plugin = await session.load("leaser");
  const error = await refusal(plugin.invoke("write", { path: join(w.cwd, "out/report.md"), lease: { fs: { write: ["${project}"] }, net: "any", memoryMiB: 512 } }));
  expect(error.code).toBe("E_SANDBOX");
  expect((error.details as { problems: { path: string }[] }).problems.map((p) => p.path)).toEqual(["sandbox.fs.write[0]", "sandbox.net"]);
  expect(error.message).toContain('"${project}" lies outside what may be written ("${project}/out")');
  expect(readFileSync(join(w.cwd, "out/report.md"), "utf8")).toBe("");
});

test("the question shows the lease the call will run under", async () => {
  using dir = tempDir();
  const w = await world(dir.path);
  await using session = await w.open();
  const plugin = await session.load("leaser");
  const asked: PermissionRequest[] = [];
  await plugin.invoke("write", { path: join(w.cwd, "out/report.md"), lease: REPORT_LEASE }, { permission: (r) => (asked.push(r), "once") });
  expect(asked[0]!.decision.display).toBe(`write ${join(w.cwd, "out/report.md")}\nthis call runs confined to: reads nothing (and its own folder); writes \${project}/out/report.md; no network`);
  expect(asked[0]!.decision.lease).toEqual({ fs: { read: [], write: ["${project}/out/report.md"] }, net: "none" });
});

test("a leased host is stopped once idle, and the next call under that lease starts a fresh one", async () => {
  using dir = tempDir();
  const w = await world(dir.path, 300);
  await using session = await w.open();
  const plugin = await session.load("leaser");
  const first = (await plugin.invoke("write", { path: join(w.cwd, "out/report.md"), lease: REPORT_LEASE })).output as Written;
  expect(alive(first.pid)).toBe(true);
  await until(() => !alive(first.pid), 10_000, "the idle leased host to stop");
  const second = (await plugin.invoke("write", { path: join(w.cwd, "out/report.md"), lease: REPORT_LEASE })).output as Written;
  expect(second.errno).toBe("");
  expect(second.pid).not.toBe(first.pid);
  expect(alive(plugin.pid!)).toBe(true);
});

test("a lease that is not a sandbox makes the gate count as failed: the question says so, offers no Always, and names the problem", async () => {
  using dir = tempDir();
  const w = await world(dir.path);
  await using session = await w.open();
  const plugin = await session.load("leaser");
  const decision = await plugin.gate("write", { path: join(w.cwd, "out/report.md"), lease: { fs: { write: ["${project}/../elsewhere"] } } });
  expect(decision).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
  expect(decision.lease).toBeUndefined();
  expect(decision.display).toContain('its sandbox lease is not a sandbox (fs.write[0]: "${project}/../elsewhere" contains ".."');
});

test("cxagent check's gate-answers fails a gate whose lease would widen the plugin's sandbox, naming the entry", async () => {
  using dir = tempDir();
  const code = `export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: "ok" } }; },
    gate() { return { display: "write everything", sandbox: { fs: { write: ["\${project}"] } } }; } };`;
  const folder = writeModule(dir.path, "wide-leaser", code, { tools: [{ name: "write", description: "writes", gated: "dynamic", inputSchema: { type: "object" } }], sandbox: { fs: { write: ["${project}/out"] } } });
  await approve(folder);
  await using session = await openSession();
  const report = await checkPlugin(session, folder, { only: ["gate-answers"] });
  const check = report.checks.find((c) => c.id === "gate-answers")!;
  expect(check.status).toBe("fail");
  expect(check.seen).toContain('its "sandbox" lease would widen the plugin\'s sandbox (sandbox.fs.write[0]: "${project}" lies outside what may be written ("${project}/out"))');
});
