/**
 * What an adapter needs to know about the plugins it serves: `plugin.onChange` (a restart, a
 * quarantine) and `session.available()` (what could be loaded, before anything runs).
 */
import { expect, test } from "bun:test";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PluginChange } from "../../src/index.ts";
import { fixture, hostsOf, openSession, tempDir, until } from "../helpers.ts";

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as { code: string });

test("onChange: a new plugin host after a crash is 'restarted'; the third crash is 'quarantined', once", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("crash-in-invoke"));
  const changes: PluginChange[] = [];
  plugin.onChange((c) => changes.push(c));
  expect((await failure(plugin.invoke("segfault")))?.code).toBe("E_CRASHED");
  expect(changes).toEqual([]);
  expect((await plugin.invoke("fine")).output.content).toBe("survived");
  expect(changes).toEqual([{ kind: "restarted" }]);
  await failure(plugin.invoke("abort"));
  await failure(plugin.invoke("exit"));
  await until(() => changes.length === 3, 5000, "the quarantine");
  expect(changes.map((c) => c.kind)).toEqual(["restarted", "restarted", "quarantined"]);
  const quarantine = changes[2] as Extract<PluginChange, { kind: "quarantined" }>;
  expect(quarantine.error.code).toBe("E_QUARANTINED");
  expect((await failure(plugin.invoke("fine")))?.code).toBe("E_QUARANTINED");
  expect(changes).toHaveLength(3);
});

test("onChange: restart() is 'restarted'; an unsubscribed listener hears nothing; a throwing one is logged", async () => {
  const logs: string[] = [];
  await using session = await openSession({ onLog: (_p, _l, text) => logs.push(text) });
  const plugin = await session.load(fixture("echo"));
  const heard: string[] = [];
  const off = plugin.onChange((c) => heard.push(c.kind));
  plugin.onChange(() => {
    throw new Error("listener bug");
  });
  await plugin.restart();
  off();
  await plugin.restart();
  expect(heard).toEqual(["restarted"]);
  expect(logs.filter((l) => l.includes("a change listener of 'echo' threw: listener bug"))).toHaveLength(2);
});

test("available(): configured, then discovered plugins, each with what load() takes; nothing runs", async () => {
  using dir = tempDir();
  const config = join(dir.path, "config");
  mkdirSync(join(config, "plugins"), { recursive: true });
  for (const name of ["echo", "noop", "ctor-marker"]) cpSync(fixture(name), join(config, "plugins", name), { recursive: true });
  writeFileSync(join(config, "config.json"), JSON.stringify({ plugins: { noop: { file: "noop.so", enabled: false }, missing: { file: "missing.so" } } }));
  await using session = await openSession({ configDir: config });
  const available = session.available();
  expect(available).toEqual([
    { name: "noop", ref: "noop", configured: true, enabled: false, problem: null },
    { name: "missing", ref: "missing", configured: true, enabled: true, problem: "its file 'missing.so' is in none of the plugin folders" },
    { name: "ctor-marker", ref: join(config, "plugins", "ctor-marker", "ctor-marker.so"), configured: false, enabled: true, problem: null },
    { name: "echo", ref: join(config, "plugins", "echo", "echo.so"), configured: false, enabled: true, problem: null },
  ]);
  expect(session.plugins).toEqual([]);
  expect(hostsOf(join(config, "plugins", "ctor-marker", "ctor-marker.so"))).toEqual([]);
  expect((await session.load(available[3]!.ref)).name).toBe("echo");
});
