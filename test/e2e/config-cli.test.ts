/**
 * `cxagent config get|set|unset`: config.json changed by a command, every change checked as a
 * load would read the file before it is written, and a bad one leaving the file as it was.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, tempDir } from "../helpers.ts";

test("set, get and unset a plugin's entry and a top-level key; the file stays valid", async () => {
  using dir = tempDir();
  const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state") };
  const file = join(dir.path, "config", "config.json");
  const run = (args: string[]) => cli(["config", ...args], { env });
  expect((await run(["get"])).stdout).toBe("{}\n"); // nothing set yet: an empty config
  expect((await run(["get", "pluginPaths"])).code).toBe(3);
  expect((await run(["set", "file", "calculator.so", "--plugin", "calculator"])).code).toBe(0);
  expect((await run(["set", "settings.precision", "2", "--plugin", "calculator"])).code).toBe(0);
  expect((await run(["set", "pluginPaths", '["~/plugins"]'])).code).toBe(0);
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ plugins: { calculator: { file: "calculator.so", settings: { precision: 2 } } }, pluginPaths: ["~/plugins"] });
  expect((await run(["get", "settings.precision", "--plugin", "calculator"])).stdout).toBe("2\n");
  expect((await run(["get", "file", "--plugin", "calculator"])).stdout).toBe("calculator.so\n");
  expect((await run(["get", "--json"])).json().value).toMatchObject({ pluginPaths: ["~/plugins"] });
  // a name holding a dot is one key, given with --plugin
  expect((await run(["set", "file", "x.so", "--plugin", "my.plugin"])).code).toBe(0);
  expect(JSON.parse(readFileSync(file, "utf8")).plugins["my.plugin"]).toEqual({ file: "x.so" });
  expect((await run(["unset", "settings", "--plugin", "calculator"])).code).toBe(0);
  expect(JSON.parse(readFileSync(file, "utf8")).plugins.calculator).toEqual({ file: "calculator.so" });
});

test("a value the config would refuse is refused, naming the path, and nothing is written", async () => {
  using dir = tempDir();
  const config = join(dir.path, "config");
  mkdirSync(config, { recursive: true });
  const file = join(config, "config.json");
  writeFileSync(file, JSON.stringify({ plugins: { calculator: { file: "calculator.so" } } }));
  const before = readFileSync(file, "utf8");
  const r = await cli(["config", "set", "enabled", "maybe", "--plugin", "calculator", "--json"], { env: { CXAGENT_CONFIG_DIR: config } });
  expect(r.code).toBe(3);
  expect(r.json().error.message).toContain("plugins.calculator.enabled");
  expect(readFileSync(file, "utf8")).toBe(before);
  const noFile = await cli(["config", "set", "enabled", "false", "--plugin", "other"], { env: { CXAGENT_CONFIG_DIR: config } });
  expect(noFile.code).toBe(3); // an entry needs its file
  expect(readFileSync(file, "utf8")).toBe(before);
  expect((await cli(["config", "frob"], { env: { CXAGENT_CONFIG_DIR: config } })).code).toBe(2);
  expect(existsSync(join(config, "plugins"))).toBe(false);
});
