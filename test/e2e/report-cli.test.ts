/**
 * Watching a call through the CLI: --jsonl for pipelines, a progress display on a terminal, and
 * the compiled binary running the reporter example with no C compiler around.
 */
import { beforeAll, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { approve, cli, ROOT, tempDir, tty } from "../helpers.ts";

const REPORTER = join(ROOT, "examples/reporter");
beforeAll(async () => {
  await approve(REPORTER);
});

test("--jsonl streams each event as a JSON line, then the envelope as the last line", async () => {
  const r = await cli(["invoke", REPORTER, "reporter_count", "--args", '{"to": 4, "delayMs": 5}', "--jsonl"]);
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
  expect(lines.slice(0, -1)).toEqual([
    { event: "stream", text: "1 " },
    { event: "progress", percent: 25, text: "counted to 1 of 4" },
    { event: "stream", text: "2 " },
    { event: "progress", percent: 50, text: "counted to 2 of 4" },
    { event: "log", level: 2, text: "halfway there" },
    { event: "stream", text: "3 " },
    { event: "progress", percent: 75, text: "counted to 3 of 4" },
    { event: "stream", text: "4 " },
    { event: "progress", percent: 100, text: "counted to 4 of 4" },
    { event: "stream", text: "\n" },
  ]);
  expect(lines.at(-1)).toMatchObject({ ok: true, result: { success: true, output: { content: "Counted to 4.", count: 4 } }, error: null });
});

test("without a terminal and without --jsonl, stdout has only the result", async () => {
  const r = await cli(["invoke", REPORTER, "reporter_count", "--args", '{"to": 3, "delayMs": 5}']);
  expect(r).toMatchObject({ code: 0, stdout: "Counted to 3.\n", stderr: "" });
});

test("on a terminal, progress and streamed text show on stderr while the call runs", async () => {
  const r = await tty(["invoke", REPORTER, "reporter_count", "--args", '{"to": 6, "delayMs": 40}'], []);
  expect(r.code).toBe(0);
  expect(r.output).toMatch(/\[#+-*\]\s+50% counted to 3 of 6/);
  expect(r.output).toContain("[reporter] info: halfway there");
  expect(r.output).toStartWith("1 \n"); // streamed text before the first progress report
  expect(r.output).toContain("2 3 4 5 6 \n"); // then whole lines above the progress line
  expect(r.output.trimEnd().endsWith("Counted to 6.")).toBe(true);
});

test("the compiled binary, alone in a folder with no C compiler on PATH, runs the reporter", async () => {
  const built = Bun.spawnSync([process.execPath, "scripts/compile.ts"], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
  expect(built.exitCode).toBe(0);
  using dir = tempDir();
  const binary = join(dir.path, "cxagent");
  copyFileSync(join(ROOT, "dist/cxagent"), binary);
  Bun.spawnSync(["chmod", "+x", binary]);
  const env = { PATH: join(dir.path, "no-bin"), HOME: dir.path, TMPDIR: dir.path };
  const r = await cli(["invoke", REPORTER, "reporter_count", "--args", '{"to": 3, "delayMs": 5}', "--jsonl"], { bin: [binary], cwd: dir.path, env });
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
  expect(lines.filter((l) => l.event === "progress").map((l) => l.percent)).toEqual([33, 66, 100]);
  expect(lines.at(-1).result.output.content).toBe("Counted to 3.");
}, 60_000);
