/**
 * Watching a call through the CLI: --jsonl for pipelines, a progress display on a terminal, and
 * the compiled binary running the reporter example with no C compiler around.
 */
import { beforeAll, expect, test } from "bun:test";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { approve, cli, fixture, renderScreen, ROOT, tempDir, tty } from "../helpers.ts";

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

test("on a terminal, streamed text shows as it arrives, a partial line too, with the progress line below it", async () => {
  using dir = tempDir();
  const marker = join(dir.path, "go");
  await approve(fixture("streams-until-told"));
  let screenWhileWaiting: string[] = [];
  const r = await tty(["invoke", fixture("streams-until-told"), "stream_wait", "--args", JSON.stringify({ marker })], [
    // The call is still running, waiting for the marker: what it streamed is on the screen already.
    { after: /, still[^]*half way/, send: "" },
  ], {
    onAnswer: (raw) => {
      screenWhileWaiting = renderScreen(raw);
      writeFileSync(marker, "");
    },
  });
  expect(r.code).toBe(0);
  expect(screenWhileWaiting.filter(Boolean)).toEqual([
    "waiting for the test, still",
    "[###############---------------]  50% half way",
  ]);
  expect(renderScreen(r.raw).filter(Boolean)).toEqual(["waiting for the test, still told", "second line", "finished"]);
});

test("on a terminal, the reporter's count, its log line and the progress line, exactly", async () => {
  const r = await tty(["invoke", REPORTER, "reporter_count", "--args", '{"to": 6, "delayMs": 1}'], []);
  expect(r.code).toBe(0);
  expect(r.output).toMatch(/\[#+-*\]\s+50% counted to 3 of 6/); // the progress line was drawn
  expect(renderScreen(r.raw).filter(Boolean)).toEqual(["1 2 3", "[reporter] info: halfway there", "4 5 6", "Counted to 6."]);
});

test("off a terminal, --stream writes the streamed text and log lines to stderr; stdout keeps only the result", async () => {
  const r = await cli(["invoke", REPORTER, "reporter_count", "--args", '{"to": 4, "delayMs": 1}', "--stream"]);
  expect(r).toMatchObject({ code: 0, stdout: "Counted to 4.\n", stderr: "1 2 \n[reporter] info: halfway there\n3 4 \n" });
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
