/**
 * A lazily served plugin (src/mcp/lazy.ts, issue 42 points 2 and 3) through the library, without
 * the MCP server around it: a real session, real module plugins and their real hosts, real files
 * changed on disk. What `cxagent mcp` does with it is tested in test/mcp/ (lazy, live,
 * cortex-lazy); this is the quick test of its branches, first in its generated-mutants entry.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_IDLE_MS, LazyPlugin, servableLazily } from "../../src/mcp/lazy.ts";
import { Session } from "../../src/session/session.ts";
import type { CxError } from "../../src/errors.ts";
import { approve, fixture, hostsOf, refusal, until } from "../helpers.ts";

/** A module plugin answering its version; `until` makes a call wait for that file, `crash` ends its host. */
const code = (version: string, extra = "") => `import { existsSync } from "node:fs";
${extra}
export default { start() {}, stop() {}, async invoke(tool, args) {
  if (args.crash) process.exit(3);
  while (args.until && !existsSync(args.until)) await new Promise((r) => setTimeout(r, 10));
  return { success: true, output: { content: "${version}:" + tool } };
} };`;

let home = "";
let configDir = "";
const sessions: Session[] = [];
const lazies: LazyPlugin[] = [];
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "cxagent-lazy-plugin-"));
  configDir = join(home, "config");
  mkdirSync(configDir);
});
afterEach(async () => {
  for (const lazy of lazies.splice(0)) await lazy.close();
  for (const session of sessions.splice(0)) await session.close();
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

let count = 0;
/** A plugin of its own (its folder, its state folder, approved) and a session to serve it. */
async function served(version = "v1", options: { tools?: string[]; extra?: string; cwd?: string } = {}) {
  const name = `lazy${count++}`;
  const folder = join(home, name);
  mkdirSync(folder);
  writeFileSync(join(folder, `${name}.ts`), code(version, options.extra));
  const tools = (options.tools ?? ["work", "more"]).map((t) => ({ name: `${name}_${t}` }));
  writeFileSync(join(folder, `${name}.plugin.json`), JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools }));
  const state = join(home, `${name}-state`);
  mkdirSync(state, { mode: 0o700 });
  await approve(folder, state);
  const session = await Session.open({ cwd: options.cwd ?? home, configDir, stateDir: state, reap: false });
  sessions.push(session);
  return { name, folder, state, session, file: join(folder, `${name}.ts`), sidecar: join(folder, `${name}.plugin.json`) };
}

function lazyOf(session: Session, ref: string, idleMs: number | null) {
  const lazy = new LazyPlugin(session, ref, session.inspect(ref), idleMs);
  lazies.push(lazy);
  return lazy;
}

const text = async (promise: Promise<{ success: boolean; output: unknown }>) => {
  const result = await promise;
  expect(result.success).toBe(true);
  return (result.output as { content: string }).content;
};

test("a host idle for 10 minutes is stopped unless told otherwise", () => {
  expect(DEFAULT_IDLE_MS).toBe(10 * 60 * 1000);
});

describe("servableLazily", () => {
  test("approved, enabled, unrefused and known before it runs; any one of them missing loads it at once", async () => {
    const { folder, session, name } = await served();
    const i = session.inspect(folder);
    expect(servableLazily(i)).toBe(true);
    expect(servableLazily({ ...i, trust: { ...i.trust, state: "new" } as typeof i.trust })).toBe(false);
    expect(servableLazily({ ...i, enabled: false })).toBe(false);
    expect(servableLazily({ ...i, shadowing: {} as NonNullable<typeof i.shadowing> })).toBe(false);
    expect(servableLazily({ ...i, dependencies: { plan: null, problem: {} as NonNullable<typeof i.dependencies.problem> } })).toBe(false);
    const collision = { holder: "another", name: `${name}_work` } as unknown as (typeof i.collisions)[number];
    expect(servableLazily({ ...i, collisions: [collision] })).toBe(false);
    // names its own older version holds (still finishing its calls) are no collision
    const own = { ...collision, holder: name };
    expect(servableLazily({ ...i, collisions: [own] }, name)).toBe(true);
    expect(servableLazily({ ...i, collisions: [own] })).toBe(false);
    expect(servableLazily({ ...i, collisions: [own, collision] }, name)).toBe(false);
    // a kind without a sidecar: only once what it described is kept
    const noSidecar = { ...i, profile: { ...i.profile, sidecar: false } };
    expect(servableLazily({ ...noSidecar, described: null })).toBe(false);
    expect(servableLazily({ ...noSidecar, described: i.manifest })).toBe(true);
  });
});

describe("a host only while calls need one", () => {
  test("listed with no host; concurrent first calls start one; idle, it stops; the next call starts it again", async () => {
    const { folder, session, name } = await served();
    const lazy = lazyOf(session, folder, 400);
    expect(lazy.name).toBe(name);
    expect(lazy.started).toBe(false);
    expect(lazy.sandboxLayers).toBeNull();
    expect(lazy.manifest).toEqual(session.inspect(folder).manifest);
    expect(lazy.tools.map((t) => t.name)).toEqual([`${name}_work`, `${name}_more`]);
    expect(lazy.awaitingApproval).toBeNull();
    expect(session.plugins).toEqual([]);
    const [a, b] = await Promise.all([text(lazy.invoke(`${name}_work`, {}, {})), text(lazy.invoke(`${name}_more`, {}, {}))]);
    expect([a, b]).toEqual([`v1:${name}_work`, `v1:${name}_more`]);
    expect(lazy.started).toBe(true);
    expect(session.plugins.map((p) => p.name)).toEqual([name]);
    expect(lazy.sandboxLayers).toEqual(session.plugin(name)!.sandboxLayers);
    await until(() => !lazy.started, 10_000, "the idle host to be stopped");
    await until(() => session.plugins.length === 0, 10_000, "the idle host to be unloaded");
    expect(lazy.sandboxLayers).toBeNull();
    expect(await text(lazy.invoke(`${name}_work`, {}, {}))).toBe(`v1:${name}_work`);
    expect(session.plugins.map((p) => p.name)).toEqual([name]);
  }, 30_000);

  test("the idle time counts from the end of the last call: a long call is not stopped, and keepAlive (null) never stops", async () => {
    const { folder, session, name } = await served();
    const lazy = lazyOf(session, folder, 200);
    const release = join(home, `${name}-release`);
    const long = lazy.invoke(`${name}_work`, { until: release }, {});
    await until(() => lazy.started, 10_000, "the host to start");
    await Bun.sleep(400); // past the idle time, the call still running
    writeFileSync(release, "");
    expect(await text(long)).toBe(`v1:${name}_work`);
    expect(lazy.started).toBe(true);
    await until(() => !lazy.started, 10_000, "the idle host to be stopped");

    const kept = await served();
    const keep = lazyOf(kept.session, kept.folder, null);
    await text(keep.invoke(`${kept.name}_work`, {}, {}));
    await Bun.sleep(400);
    expect(keep.started).toBe(true);
    expect(kept.session.plugins).toHaveLength(1);
  }, 30_000);

  test("a second call while the first runs arms no idle stop under it", async () => {
    const { folder, session, name } = await served();
    const lazy = lazyOf(session, folder, 200);
    const release = join(home, `${name}-release`);
    const long = text(lazy.invoke(`${name}_work`, { until: release }, {}));
    await until(() => lazy.started, 10_000, "the host to start");
    expect(await text(lazy.invoke(`${name}_more`, {}, {}))).toBe(`v1:${name}_more`);
    await Bun.sleep(400); // past the idle time since the short call, the long one still running
    expect(session.plugins).toHaveLength(1);
    writeFileSync(release, "");
    expect(await long).toBe(`v1:${name}_work`);
    // A call that starts while the idle time of the one before runs: the host stays while it runs.
    const later = join(home, `${name}-release-later`);
    const next = text(lazy.invoke(`${name}_work`, { until: later }, {}));
    await Bun.sleep(400);
    expect(lazy.started).toBe(true);
    expect(session.plugins).toHaveLength(1);
    writeFileSync(later, "");
    expect(await next).toBe(`v1:${name}_work`);
  }, 30_000);

  test("a host that failed to start is started again by the next call", async () => {
    const marker = join(home, "failed-once");
    const extra = `import { writeFileSync } from "node:fs";
if (!existsSync(${JSON.stringify(marker)})) { writeFileSync(${JSON.stringify(marker)}, "1"); throw new Error("first start fails"); }`;
    const { folder, session, name } = await served("v1", { extra });
    const lazy = lazyOf(session, folder, null);
    const error = await refusal(lazy.invoke(`${name}_work`, {}, {}));
    expect(error.code).not.toBe("E_NOT_APPROVED");
    expect(lazy.started).toBe(false);
    expect(await text(lazy.invoke(`${name}_work`, {}, {}))).toBe(`v1:${name}_work`);
    expect(lazy.started).toBe(true);
  }, 30_000);

  test("its host's changes reach the listeners registered before it started; one removed hears nothing", async () => {
    const { folder, session, name } = await served();
    const lazy = lazyOf(session, folder, null);
    const heard: string[] = [];
    const gone: string[] = [];
    lazy.onChange((c) => heard.push(c.kind));
    lazy.onChange((c) => gone.push(c.kind))();
    lazy.onSubmit(() => {})();
    expect((await refusal(lazy.invoke(`${name}_work`, { crash: true }, {}))).code).toBe("E_CRASHED");
    expect(await text(lazy.invoke(`${name}_work`, {}, {}))).toBe(`v1:${name}_work`); // on a new host
    expect(heard).toEqual(["restarted"]);
    expect(gone).toEqual([]);
  }, 30_000);

  test("a client plugin's submits reach the listeners registered before its host started", async () => {
    const state = join(home, "poller-state");
    mkdirSync(state, { mode: 0o700 });
    const poller = fixture("poller");
    await approve(poller, state);
    const session = await Session.open({ cwd: home, configDir, stateDir: state, reap: false });
    sessions.push(session);
    const lazy = lazyOf(session, poller, null);
    const goals: string[] = [];
    const removed: string[] = [];
    lazy.onSubmit((s) => void goals.push(`${s.plugin}: ${s.goal}`));
    lazy.onSubmit((s) => void removed.push(s.goal))();
    await lazy.invoke("submit_once", {}, {});
    await until(() => goals.length > 0, 10_000, "the submit");
    expect(goals).toEqual(["poller: run the tests"]);
    expect(removed).toEqual([]);
  }, 30_000);

  test("commands go through the same host, with no text unless given", async () => {
    const state = join(home, "probe-state");
    mkdirSync(state, { mode: 0o700 });
    const probe = join(home, "probe");
    cpSync(join(import.meta.dir, "../fixtures/modules/probe"), probe, { recursive: true });
    await approve(probe, state);
    const session = await Session.open({ cwd: home, configDir, stateDir: state, reap: false });
    sessions.push(session);
    const lazy = lazyOf(session, probe, null);
    expect((await lazy.command("greet")).message).toBe("hello, world");
    expect(lazy.started).toBe(true);
    expect((await lazy.command("greet", "you")).message).toBe("hello, you");
    expect(session.plugins).toHaveLength(1);
  }, 30_000);

  test("tools a config file hides are not listed", async () => {
    const project = join(home, "project-hide");
    mkdirSync(join(project, ".cxagent"), { recursive: true });
    const { folder, session, name } = await served("v1", { cwd: project });
    writeFileSync(join(project, ".cxagent", "config.json"), JSON.stringify({ plugins: { [name]: { tools: { deny: [`${name}_more`] } } } }));
    const fresh = await Session.open({ cwd: project, configDir, stateDir: join(home, `${name}-state`), reap: false });
    sessions.push(fresh);
    expect(session.inspect(folder).selection.policy.hidden.size).toBe(0);
    expect(lazyOf(fresh, folder, null).tools.map((t) => t.name)).toEqual([`${name}_work`]);
  });
});

describe("live: its files change", () => {
  test("they leave the list until approved, a call is refused meanwhile, and the approved new bytes answer the next call", async () => {
    const { folder, session, name, file } = await served();
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    let removedTold = 0;
    lazy.onListChanged(() => void removedTold++)();
    lazy.watch();
    expect(await text(lazy.invoke(`${name}_work`, {}, {}))).toBe(`v1:${name}_work`);
    writeFileSync(file, code("v2"));
    await until(() => told === 1, 10_000, "the tools to leave the list");
    expect(lazy.tools).toEqual([]);
    const pending = lazy.awaitingApproval!;
    expect(pending).toEqual({ plugin: name, hash: session.inspect(folder).loadSet.hash, folder, changes: { added: [], removed: [], modified: [`${name}.ts`] } });
    const refused = await refusal(lazy.invoke(`${name}_work`, {}, {}));
    expect(refused.code).toBe("E_NOT_APPROVED");
    expect(refused.message).toBe(`plugin '${name}': its files changed since it was approved; approve them with: cxagent approve ${folder}`);
    expect(refused.details).toEqual({ plugin: name });
    // Looked at again with nothing new: still off the list, nobody told.
    lazy.recheckSoon();
    await Bun.sleep(250);
    expect(told).toBe(1);
    await lazy.approvePending(pending.hash);
    await until(() => told === 2, 10_000, "the tools to come back");
    expect(lazy.tools.map((t) => t.name)).toEqual([`${name}_work`, `${name}_more`]);
    expect(lazy.awaitingApproval).toBeNull();
    expect(session.plugins).toEqual([]); // the old host went; none started yet for the new bytes
    expect(await text(lazy.invoke(`${name}_work`, {}, {}))).toBe(`v2:${name}_work`);
    // Looked at again with nothing changed: nobody told.
    lazy.recheckSoon();
    await Bun.sleep(250);
    expect(told).toBe(2);
    expect(removedTold).toBe(0);
  }, 30_000);

  test("a change in a subfolder is seen; with its approval revoked, a change has no list of what changed", async () => {
    const { folder, session, name, state } = await served();
    // (the subfolder and its file were there when approved)
    const fresh = join(home, `${name}-sub`);
    cpSync(folder, fresh, { recursive: true });
    mkdirSync(join(fresh, "sub"));
    writeFileSync(join(fresh, "sub", "data.txt"), "one\n");
    await approve(fresh, state);
    const lazy = lazyOf(session, fresh, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    lazy.watch();
    writeFileSync(join(fresh, "sub", "data.txt"), "two\n");
    await until(() => told === 1, 10_000, "the change in the subfolder to be seen");
    expect(lazy.awaitingApproval?.changes).toEqual({ added: [], removed: [], modified: ["sub/data.txt"] });
    await approve(fresh, state);
    lazy.recheckSoon();
    await until(() => told === 2, 10_000, "the tools to come back");
    // Changed again with no approval left to compare with: no list of what changed.
    session.revoke(fresh);
    writeFileSync(join(fresh, "sub", "data.txt"), "three\n");
    await until(() => told === 3, 10_000, "the tools to leave the list");
    expect(lazy.awaitingApproval).toEqual({ plugin: name, hash: session.inspect(fresh).loadSet.hash, folder: fresh, changes: null });
  }, 30_000);

  test("a call running when new approved bytes swap in finishes on the old host, which goes after it", async () => {
    const { folder, session, name, file, state } = await served();
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    const release = join(home, `${name}-release`);
    const running = text(lazy.invoke(`${name}_work`, { until: release }, {}));
    await until(() => lazy.started, 10_000, "the host to start");
    const old = session.plugin(name)!;
    writeFileSync(file, code("v2"));
    await approve(folder, state);
    lazy.recheckSoon();
    await until(() => told === 1, 10_000, "the new bytes to be listed");
    expect(lazy.started).toBe(false);
    expect(session.plugin(name)).toBe(old); // still finishing its call
    const next = text(lazy.invoke(`${name}_more`, {}, {})); // waits for the old host to go
    await Bun.sleep(200);
    expect(session.plugin(name)).toBe(old);
    writeFileSync(release, "");
    expect(await running).toBe(`v1:${name}_work`);
    expect(await next).toBe(`v2:${name}_more`);
    expect(session.plugin(name)).not.toBe(old);
  }, 30_000);

  test("a sidecar that no longer reads is said as it is, with nothing to approve", async () => {
    const { folder, session, name, sidecar } = await served();
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    lazy.watch();
    writeFileSync(sidecar, "{ not json");
    await until(() => told === 1, 10_000, "the tools to leave the list");
    expect(lazy.tools).toEqual([]);
    expect(lazy.awaitingApproval).toBeNull();
    let inspectError: CxError | null = null;
    try {
      session.inspect(folder);
    } catch (error) {
      inspectError = error as CxError;
    }
    const refused = await refusal(lazy.invoke(`${name}_work`, {}, {}));
    expect(refused.message).toBe(`plugin '${name}': ${inspectError!.message}`);
  }, 30_000);

  test("files that change back to the approved bytes come back on the host that runs, without a new one", async () => {
    const { folder, session, name, sidecar } = await served();
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    await text(lazy.invoke(`${name}_work`, {}, {}));
    const host = session.plugin(name)!;
    const bytes = await Bun.file(sidecar).text();
    writeFileSync(sidecar, "{ not json");
    lazy.recheckSoon();
    await until(() => told === 1, 10_000, "the tools to leave the list");
    writeFileSync(sidecar, bytes);
    lazy.recheckSoon();
    await until(() => told === 2, 10_000, "the tools to come back");
    expect(lazy.tools).toHaveLength(2);
    expect(lazy.started).toBe(true);
    expect(session.plugin(name)).toBe(host);
  }, 30_000);

  test("approved new bytes it cannot serve lazily (a tool now held by another plugin) stay off the list, saying to restart", async () => {
    const { folder, session, name, sidecar, state } = await served();
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    const other = join(home, `${name}-other`);
    mkdirSync(other);
    writeFileSync(join(other, "other.ts"), code("o"));
    writeFileSync(join(other, "other.plugin.json"), JSON.stringify({ pluginContract: 4, name: "other", version: "1.0.0", tools: [{ name: "other_tool" }] }));
    await approve(other, state);
    await session.load(other);
    writeFileSync(sidecar, JSON.stringify({ pluginContract: 4, name, version: "1.0.0", tools: [{ name: `${name}_work` }, { name: "other_tool" }] }));
    await approve(folder, state);
    lazy.recheckSoon();
    await until(() => told === 1, 10_000, "the tools to leave the list");
    expect(lazy.awaitingApproval).toBeNull();
    const refused = await refusal(lazy.invoke(`${name}_work`, {}, {}));
    expect(refused.message).toBe(`plugin '${name}': its changed files cannot be served lazily; restart the server to load them`);
  }, 30_000);

  test("the approval withdrawn while the same files are served: off the list, nobody asked, calls refused, its host ended", async () => {
    const { folder, session, name } = await served();
    const lazy = lazyOf(session, folder, null);
    await text(lazy.invoke(`${name}_work`, {}, {}));
    expect(lazy.started).toBe(true);
    let told = 0;
    lazy.onListChanged(() => void told++);
    session.revoke(folder);
    lazy.recheckSoon();
    await until(() => told === 1, 5_000, "the list to change");
    expect(lazy.tools).toHaveLength(0);
    expect(lazy.awaitingApproval).toBeNull();
    const refused = await refusal(lazy.invoke(`${name}_work`, {}, {}));
    expect(refused.code).toBe("E_NOT_APPROVED");
    expect(refused.message).toContain("its approval was withdrawn; approve it again with: cxagent approve");
    expect(lazy.started).toBe(false);
    lazy.recheckSoon(); // looked at again, still withdrawn: nothing new to tell
    await Bun.sleep(300);
    expect(told).toBe(1);
  }, 30_000);

  test("the approval withdrawn while a call is starting its host: the host ends when that call does, not at its idle time", async () => {
    const started = join(home, `gate-${count}`);
    const { folder, session, name, file } = await served("v1", { extra: `while (!existsSync(${JSON.stringify(started)})) await new Promise((r) => setTimeout(r, 10));` });
    const lazy = lazyOf(session, folder, null); // no idle stop at all
    let told = 0;
    lazy.onListChanged(() => void told++);
    const call = text(lazy.invoke(`${name}_work`, {}, {}));
    await until(() => hostsOf(file).length > 0, 10_000, "its host to be loading its module (trust settled)");
    session.revoke(folder);
    lazy.recheckSoon();
    await until(() => told === 1, 5_000, "the list to change");
    expect(lazy.started).toBe(false); // still loading
    writeFileSync(started, "");
    expect(await call).toBe(`v1:${name}_work`); // the call it had begun
    await until(() => !lazy.started && session.plugins.length === 0, 10_000, "its host to end after that call");
  }, 30_000);

  test("closed: no change is looked at, no listener told, no idle stop armed", async () => {
    const { folder, session, name, file } = await served();
    const lazy = lazyOf(session, folder, 200);
    let told = 0;
    lazy.onListChanged(() => void told++);
    lazy.watch();
    await text(lazy.invoke(`${name}_work`, {}, {}));
    await lazy.close();
    writeFileSync(file, code("v2"));
    lazy.recheckSoon();
    await Bun.sleep(400);
    expect(told).toBe(0);
    expect(lazy.started).toBe(true); // closing the session stops it, not an idle timer
  }, 30_000);
});

describe("a plugin that declares its tools only when it runs (Cortex)", () => {
  const BASIC = fixture("cortex-basic");

  test("listed from what it described; describing otherwise when started, it is listed as it says now", async () => {
    const folder = join(home, "cortex-described");
    cpSync(BASIC, folder, { recursive: true });
    const state = join(home, "cortex-described-state");
    mkdirSync(state, { mode: 0o700 });
    await approve(folder, state);
    const session = await Session.open({ cwd: home, configDir, stateDir: state, reap: false });
    sessions.push(session);
    expect(servableLazily(session.inspect(folder))).toBe(false); // never described here
    await session.load(folder);
    await session.unload("cortex-basic");
    const inspection = session.inspect(folder);
    expect(servableLazily(inspection)).toBe(true);
    const described = inspection.described!;
    // Listed from a describe that differs from what it now says.
    const planted = { ...inspection, described: { ...described, tools: [...described.tools, { ...described.tools[0]!, name: "ghost_tool" }] } };
    const lazy = new LazyPlugin(session, folder, planted, null);
    lazies.push(lazy);
    let told = 0;
    lazy.onListChanged(() => void told++);
    expect(lazy.tools.map((t) => t.name)).toContain("ghost_tool");
    expect(lazy.manifest.tools.map((t) => t.name)).toContain("ghost_tool");
    const echoed = await lazy.invoke("echo", { x: 1 }, {});
    expect(echoed.success).toBe(true);
    expect(told).toBe(1);
    expect(lazy.tools.map((t) => t.name)).not.toContain("ghost_tool");
    expect(lazy.tools.map((t) => t.name).sort()).toEqual(described.tools.map((t) => t.name).sort());
  }, 30_000);

  test("listed as it described: a start that describes the same tells nobody", async () => {
    const folder = join(home, "cortex-same");
    cpSync(BASIC, folder, { recursive: true });
    const state = join(home, "cortex-same-state");
    mkdirSync(state, { mode: 0o700 });
    await approve(folder, state);
    const session = await Session.open({ cwd: home, configDir, stateDir: state, reap: false });
    sessions.push(session);
    await session.load(folder);
    await session.unload("cortex-basic");
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    expect((await lazy.invoke("echo", {}, {})).success).toBe(true);
    expect(told).toBe(0);
  }, 30_000);

  /** A copy of cortex-basic of its own, approved, and a session (its hosts given `env`). */
  async function cortexCopy(name: string, env: Record<string, string> = {}) {
    const folder = join(home, name);
    cpSync(BASIC, folder, { recursive: true });
    const state = join(home, `${name}-state`);
    mkdirSync(state, { mode: 0o700 });
    await approve(folder, state);
    const session = await Session.open({ cwd: home, configDir, stateDir: state, reap: false, env });
    sessions.push(session);
    return { folder, state, session };
  }

  test("new approved bytes are started at once to describe them (after the old host's last call), then listed", async () => {
    const { folder, state, session } = await cortexCopy("cortex-new");
    await session.load(folder);
    await session.unload("cortex-basic");
    const lazy = lazyOf(session, folder, 500);
    let told = 0;
    lazy.onListChanged(() => void told++);
    const names = lazy.tools.map((t) => t.name);
    // A call that waits for a second one inside it: the old host's last call, ended by the test.
    const last = lazy.invoke("wait", { n: 2 }, {});
    await until(() => lazy.started, 10_000, "the host to start");
    const old = session.plugin("cortex-basic")!;
    writeFileSync(join(folder, "NOTES.txt"), "a change\n");
    await approve(folder, state);
    lazy.recheckSoon();
    await until(() => told === 1, 10_000, "the tools to leave the list while the new bytes start");
    expect(lazy.tools).toEqual([]);
    expect(lazy.awaitingApproval).toBeNull(); // nothing to approve: it is approved
    expect((await refusal(lazy.invoke("echo", {}, {}))).message).toBe("plugin 'cortex-basic': its new files are starting, to say what tools they have; try again in a moment");
    await Bun.sleep(300);
    expect(told).toBe(1);
    expect(session.plugin("cortex-basic")).toBe(old); // not started before the old host's call ends
    await Promise.all([old.invoke("wait", { n: 2 }), last]);
    await until(() => lazy.tools.length > 0, 20_000, "what the new bytes describe to be listed");
    expect(told).toBeGreaterThanOrEqual(2);
    expect(lazy.tools.map((t) => t.name)).toEqual(names);
    expect(lazy.started).toBe(true);
    expect(session.plugin("cortex-basic")).not.toBe(old);
    await until(() => !lazy.started, 10_000, "the host that described them to be stopped when idle");
    expect((await lazy.invoke("echo", {}, {})).success).toBe(true);
  }, 60_000);

  test("closed while new bytes start: what they describe is not listed", async () => {
    const { folder, state, session } = await cortexCopy("cortex-closing");
    await session.load(folder);
    await session.unload("cortex-basic");
    const lazy = lazyOf(session, folder, null);
    let told = 0;
    lazy.onListChanged(() => void told++);
    const last = lazy.invoke("wait", { n: 2 }, {});
    await until(() => lazy.started, 10_000, "the host to start");
    const old = session.plugin("cortex-basic")!;
    writeFileSync(join(folder, "NOTES.txt"), "a change\n");
    await approve(folder, state);
    lazy.recheckSoon();
    await until(() => told === 1, 10_000, "the new bytes to start");
    await lazy.close();
    await Promise.all([old.invoke("wait", { n: 2 }), last]);
    await until(() => session.plugin("cortex-basic") !== undefined && session.plugin("cortex-basic") !== old, 20_000, "the new bytes to have started");
    await Bun.sleep(200);
    expect(told).toBe(2); // the load's own (it describes otherwise than nothing kept), not a listing
    expect(lazy.tools).toEqual([]);
  }, 60_000);

  /** Looks at its files now (recheckSoon's debounce aside), so that two changes land in order. */
  const recheckNow = (lazy: LazyPlugin) => (lazy as unknown as { recheck(): void }).recheck();

  /**
   * A lazily served copy whose old host runs a call (cortex-basic's `wait`, ended by the test) while
   * its files change and are approved twice: the first change's start waits for that call.
   */
  async function changedTwice(name: string, env: Record<string, string> = {}) {
    const { folder, state, session } = await cortexCopy(name, env);
    await session.load(folder);
    await session.unload("cortex-basic");
    const lazy = lazyOf(session, folder, null);
    const seen = { told: 0 };
    lazy.onListChanged(() => void seen.told++);
    const last = lazy.invoke("wait", { n: 2 }, {});
    await until(() => lazy.started, 10_000, "the host to start");
    const old = session.plugin("cortex-basic")!;
    writeFileSync(join(folder, "NOTES.txt"), "one\n");
    await approve(folder, state);
    recheckNow(lazy);
    expect(seen.told).toBe(1);
    const release = () => Promise.all([old.invoke("wait", { n: 2 }), last]);
    const again = async () => {
      writeFileSync(join(folder, "NOTES.txt"), "two\n");
      await approve(folder, state);
      recheckNow(lazy);
    };
    return { lazy, seen, release, again, session };
  }

  test("the old host's idle time does not stop the host that describes new bytes: that one has its own", async () => {
    const { folder, state, session } = await cortexCopy("cortex-idle-swap");
    await session.load(folder);
    await session.unload("cortex-basic");
    const lazy = lazyOf(session, folder, 2000);
    expect((await lazy.invoke("echo", {}, {})).success).toBe(true); // the old host, idle from now
    const idleFrom = Date.now();
    const old = session.plugin("cortex-basic")!;
    await Bun.sleep(700);
    writeFileSync(join(folder, "NOTES.txt"), "a change\n");
    await approve(folder, state);
    recheckNow(lazy);
    await until(() => lazy.tools.length > 0, 20_000, "the new bytes to be listed");
    expect(session.plugin("cortex-basic")).not.toBe(old);
    // Past the old host's idle time; the new one's, started 700 ms or more later, still runs.
    await Bun.sleep(Math.max(0, idleFrom + 2300 - Date.now()));
    expect(lazy.started).toBe(true);
  }, 60_000);

  test("files changed again while new ones start: only the last start's end lists them", async () => {
    const { lazy, seen, release, again } = await changedTwice("cortex-twice");
    await again();
    expect(seen.told).toBe(1);
    await release();
    await until(() => lazy.tools.length > 0, 20_000, "the new bytes to be listed");
    await Bun.sleep(200);
    // the load's own (it describes otherwise than nothing kept), then the last start's listing
    expect(seen.told).toBe(3);
  }, 60_000);

  test("files changed again while new ones start, and that start fails: said once, by the last", async () => {
    const once = join(home, "fault-once-twice");
    writeFileSync(once, ""); // while it exists no host misbehaves; the first to start after it goes fails
    const { lazy, seen, release, again } = await changedTwice("cortex-twice-fails", { CXAGENT_FX_FAULT: "init:exit", CXAGENT_FX_FAULT_ONCE: once });
    await again();
    rmSync(once);
    await release();
    await until(() => seen.told > 1, 20_000, "the failed start to be said");
    await Bun.sleep(200);
    expect(seen.told).toBe(2);
    expect((await refusal(lazy.invoke("echo", {}, {}))).message).toMatch(/^plugin 'cortex-basic': its new files failed to start: /);
  }, 60_000);

  test("closed while new bytes start, and that start fails: nobody is told", async () => {
    const once = join(home, "fault-once-closed");
    writeFileSync(once, "");
    const { lazy, seen, release, session } = await changedTwice("cortex-closed-fails", { CXAGENT_FX_FAULT: "init:exit", CXAGENT_FX_FAULT_ONCE: once });
    await lazy.close();
    rmSync(once);
    await release();
    await until(() => existsSync(once), 20_000, "the new bytes' start (it fails, writing the file again)");
    await Bun.sleep(300);
    expect(session.plugin("cortex-basic")).toBeUndefined();
    expect(seen.told).toBe(1);
  }, 60_000);

  test("new approved bytes whose start fails are said, and stay off the list", async () => {
    const { folder, state, session } = await cortexCopy("cortex-fails", { CXAGENT_FX_CORTEX: "info:not_json" });
    // Listed from a describe made before (planted: every start of this session fails).
    const described = { ...session.inspect(folder).manifest, tools: [{ name: "echo", description: "echoes" }] } as unknown as NonNullable<ReturnType<Session["inspect"]>["described"]>;
    const lazy = new LazyPlugin(session, folder, { ...session.inspect(folder), described }, null);
    lazies.push(lazy);
    let told = 0;
    lazy.onListChanged(() => void told++);
    expect(lazy.tools.map((t) => t.name)).toEqual(["echo"]);
    writeFileSync(join(folder, "NOTES.txt"), "a change\n");
    await approve(folder, state);
    lazy.recheckSoon();
    await until(() => told === 2, 20_000, "the failed start to be said");
    expect(lazy.tools).toEqual([]);
    expect(lazy.started).toBe(false);
    expect((await refusal(lazy.invoke("echo", {}, {}))).message).toMatch(/^plugin 'cortex-basic': its new files failed to start: \S/);
  }, 60_000);
});
