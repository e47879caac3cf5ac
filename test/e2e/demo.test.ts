/**
 * README's main job, `npm run demo`, runs to its end as a fresh machine's user would run it: with
 * no $XDG_RUNTIME_DIR (CI, a container, root), so that module plugins' snapshots go under the
 * demo's own state folder, which must then be private all the way up.
 */
import { expect, test } from "bun:test";
import { ROOT } from "../helpers.ts";

test("npm run demo: every step as expected, with no $XDG_RUNTIME_DIR", async () => {
  const { XDG_RUNTIME_DIR: _, ...env } = process.env;
  await using proc = Bun.spawn([process.execPath, "scripts/demo.ts"], { cwd: ROOT, env: { ...env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(stdout).not.toContain("expected 0)");
  expect(stdout).toContain("all steps done");
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
}, 600_000);
