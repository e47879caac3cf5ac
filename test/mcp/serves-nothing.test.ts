/**
 * `cxagent mcp` with nothing to serve still serves (a plugin may be approved later), and says on
 * stderr where it looked, so an empty tools/list is never a mystery.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { cli, tempDir } from "../helpers.ts";

test("serving no plugin names the folders it searched", async () => {
  using dir = tempDir();
  const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state") };
  // stdin ends at once: the server starts, says what it serves, and stops
  const r = await cli(["mcp", "--cwd", dir.path], { env, stdin: "" });
  expect(r.code).toBe(0);
  expect(r.stderr).toContain(`no enabled, approved plugin to serve; looked in ${join(dir.path, ".cxagent/plugins")}, ${join(dir.path, "config/plugins")} and config.json (see cxagent list)`);
  expect(r.stderr).toContain("serving over stdio: 0 plugins (0 tools)");
});
