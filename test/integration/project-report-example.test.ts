/** examples/project-report (issue 39 point 8): it reads the project and writes out/report.md, and nothing beside it. */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { approve, openSession, ROOT, tempDir } from "../helpers.ts";

test("the example reads the project and writes its one report, confined by the kernel", async () => {
  using dir = tempDir();
  mkdirSync(join(dir.path, "out"));
  mkdirSync(join(dir.path, "src"));
  writeFileSync(join(dir.path, "src/a.ts"), "");
  writeFileSync(join(dir.path, "src/b.ts"), "");
  writeFileSync(join(dir.path, "notes.md"), "");
  const folder = join(ROOT, "examples/project-report");
  await approve(folder);
  await using session = await openSession({ cwd: dir.path });
  const plugin = await session.load(folder);
  expect(plugin.sandboxLayers).toEqual(expect.arrayContaining(["landlock", "seccomp", "rlimits"]));
  const result = await plugin.invoke("report_project", {});
  expect(result.success).toBe(true);
  const report = readFileSync(join(dir.path, "out/report.md"), "utf8");
  expect(report).toContain("| .ts | 2 |");
  expect(report).toContain("| .md | 1 |");
  expect(existsSync(join(dir.path, "report.md"))).toBe(false);
});
