/**
 * The result store's worst values (issue 41's finishing), with real processes and real files: a
 * result swapped for a link while it is read (by the store and by `cxagent result`), two
 * processes storing the same result at once, a store written while another process reaps, and a
 * writer killed (SIGKILL, a child of this test) in the middle of a spill.
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, linkSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResultStore } from "../../src/results/store.ts";
import { approve, cli, fixture, ROOT, tempDir, until } from "../helpers.ts";

const STORE = join(ROOT, "src/results/store.ts");
const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const temps = (folder: string) => readdirSync(folder).filter((n) => n.endsWith(".tmp"));

/** Starts `bun <script>` (a child of this test: the only process a signal here is sent to). */
function child(dir: string, name: string, code: string) {
  const script = join(dir, `${name}.ts`);
  writeFileSync(script, code);
  return Bun.spawn([process.execPath, script], { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** Waits for `proc` at most `ms`; a child still running then is killed (by its pid) and the wait fails. */
async function finished(proc: ReturnType<typeof child>, ms: number, what: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const timer = setTimeout(() => proc.kill("SIGKILL"), ms);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (proc.signalCode === "SIGKILL") throw new Error(`${what} did not finish within ${ms} ms (killed): ${stderr}`);
  return { code, stdout, stderr };
}

test("a result swapped for a link (to a file outside, to another valid result) is refused by the store and by cxagent result, never followed", async () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const mine = store.put("mine ".repeat(1000), { plugin: "p", tool: "t" });
  const other = store.put("other ".repeat(1000), { plugin: "p", tool: "t" });
  const outside = join(dir.path, "outside.txt");
  writeFileSync(outside, "OUTSIDE CONTENT", { mode: 0o600 });
  const file = store.pathOf(mine.sha256);
  for (const target of [outside, store.pathOf(other.sha256)]) {
    rmSync(file);
    symlinkSync(target, file);
    expect(() => store.read(mine.ref)).toThrow(`the stored result ${file} is not trusted: it is not a plain file of this user's with mode 0600`);
    const shown = await cli(["result", mine.ref], { env: { CXAGENT_STATE_DIR: dir.path } });
    expect(shown.code).toBe(3);
    expect(shown.stderr).toContain(`the stored result ${file} is not trusted`);
    expect(shown.stdout).not.toContain("OUTSIDE");
    expect(shown.stdout).not.toContain("other");
  }
}, 60_000);

test("a result swapped to and fro with links (to a FIFO, to /dev/zero, to another result) while it is read: every read is the exact bytes or a refusal, none hangs", async () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "exact ".repeat(50_000);
  const mine = store.put(text, { plugin: "p", tool: "t" });
  const other = store.put("other ".repeat(50_000), { plugin: "p", tool: "t" });
  const file = store.pathOf(mine.sha256);
  const keep = join(dir.path, "keep");
  linkSync(file, keep);
  const fifo = join(dir.path, "fifo");
  execFileSync("mkfifo", [fifo]);
  // The swapper renames links over the name and the real file back, as fast as it can, until told to stop.
  const swapper = child(
    dir.path,
    "swapper",
    `import { existsSync, linkSync, renameSync, symlinkSync } from "node:fs";
const targets = [${JSON.stringify(fifo)}, "/dev/zero", ${JSON.stringify(store.pathOf(other.sha256))}];
for (let i = 0; !existsSync("stop"); i++) {
  symlinkSync(targets[i % 3], "link"); renameSync("link", ${JSON.stringify(file)});
  linkSync(${JSON.stringify(keep)}, "back"); renameSync("back", ${JSON.stringify(file)});
}`,
  );
  const reader = child(
    dir.path,
    "reader",
    `import { ResultStore } from ${JSON.stringify(STORE)};
const store = new ResultStore(${JSON.stringify(dir.path)});
const seen = { exact: 0, refused: 0, wrong: 0 };
const until = Date.now() + 4000;
while (Date.now() < until) {
  try {
    const { bytes } = store.read(${JSON.stringify(mine.ref)});
    if (bytes.toString() === ${JSON.stringify(text)}) seen.exact++; else seen.wrong++;
  } catch (error) {
    if (error.code === "E_STATE" || error.code === "E_NOT_FOUND") seen.refused++; else throw error;
  }
}
console.log(JSON.stringify(seen));`,
  );
  let read;
  const shown: { code: number; stdout: string; stderr: string }[] = [];
  try {
    // cxagent result meanwhile: the exact bytes, or a refusal naming the file.
    for (let i = 0; i < 6; i++) shown.push(await cli(["result", mine.ref], { env: { CXAGENT_STATE_DIR: dir.path } }));
    read = await finished(reader, 30_000, "the reader");
  } finally {
    writeFileSync(join(dir.path, "stop"), "");
    await finished(swapper, 30_000, "the swapper");
  }
  expect(read.stderr).toBe("");
  const seen = JSON.parse(read.stdout);
  expect(seen.wrong).toBe(0);
  expect(seen.exact + seen.refused).toBeGreaterThan(10);
  for (const r of shown) {
    if (r.code === 0) expect(r.stdout === text || r.stdout === `${text}\n`).toBe(true);
    else expect({ code: r.code, refused: /is not trusted|is not in/.test(r.stderr) }).toEqual({ code: 3, refused: true });
  }
  renameSync(keep, file);
  expect(store.text(mine.ref)).toBe(text);
}, 90_000);

test("two processes storing the same result at the same moment: both succeed, one file, 0600, the exact bytes, no temp file left", async () => {
  using dir = tempDir();
  const content = "same result ".repeat(2_000_000); // 24 MB: the two writes overlap
  const writer = (n: number) =>
    child(
      dir.path,
      `writer${n}`,
      `import { existsSync } from "node:fs";
import { ResultStore } from ${JSON.stringify(STORE)};
const content = "same result ".repeat(2_000_000);
while (!existsSync("go")) await Bun.sleep(1);
const store = new ResultStore(${JSON.stringify(dir.path)});
const w = store.begin();
for (let at = 0; at < content.length; at += 1 << 20) w.write(Buffer.from(content.slice(at, at + (1 << 20))));
console.log(JSON.stringify(w.finish({ plugin: "p${n}", tool: "t" })));`,
    );
  const writers = [writer(1), writer(2)];
  writeFileSync(join(dir.path, "go"), "");
  const done = await Promise.all(writers.map((w, i) => finished(w, 60_000, `writer ${i + 1}`)));
  for (const d of done) expect({ code: d.code, stderr: d.stderr }).toEqual({ code: 0, stderr: "" });
  const refs = done.map((d) => JSON.parse(d.stdout));
  expect(refs[0]).toEqual(refs[1]);
  expect(refs[0]).toEqual({ ref: `cxref:sha256-${sha(content)}`, sha256: sha(content), bytes: content.length });
  const folder = join(dir.path, "results");
  expect(readdirSync(folder).sort()).toEqual([`sha256-${sha(content)}`, `sha256-${sha(content)}.json`]);
  expect(statSync(join(folder, `sha256-${sha(content)}`)).mode & 0o777).toBe(0o600);
  expect(new ResultStore(dir.path).text(refs[0].ref)).toBe(content);
}, 120_000);

test("two cxagent invoke sessions spilling the same 5 MB result at once: both deliver the same reference, one 0600 file of the exact bytes", async () => {
  using dir = tempDir();
  await approve(fixture("big-reply"), dir.path);
  const run = () => cli(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 5000000, "tag": 4}', "--json", "--max-output", "2000"], { env: { CXAGENT_STATE_DIR: dir.path } });
  const [a, b] = await Promise.all([run(), run()]);
  expect([a.code, b.code]).toEqual([0, 0]);
  const spilled = [a.json().result.spilled, b.json().result.spilled];
  expect(spilled[0]).toEqual(spilled[1]);
  const folder = join(dir.path, "results");
  expect(readdirSync(folder).sort()).toEqual([`sha256-${spilled[0].sha256}`, `sha256-${spilled[0].sha256}.json`]);
  expect(statSync(join(folder, `sha256-${spilled[0].sha256}`)).mode & 0o777).toBe(0o600);
  const stored = readFileSync(join(folder, `sha256-${spilled[0].sha256}`));
  expect(stored.length).toBe(5_000_000);
  expect(sha(stored)).toBe(spilled[0].sha256);
  expect(stored.subarray(0, 3).toString()).toBe("efg");
}, 120_000);

test("a result written while another process runs cxagent reap: the write under way is left alone and stored; an expired result is removed", async () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const old = store.put("an old result", { plugin: "p", tool: "t" });
  const aged = new Date(Date.now() - 8 * 24 * 3_600_000);
  utimesSync(store.pathOf(old.sha256), aged, aged);
  const writer = child(
    dir.path,
    "slow-writer",
    `import { existsSync } from "node:fs";
import { ResultStore } from ${JSON.stringify(STORE)};
const w = new ResultStore(${JSON.stringify(dir.path)}).begin();
w.write(Buffer.from("first half, "));
console.log("writing");
while (!existsSync("reaped")) await Bun.sleep(5);
w.write(Buffer.from("second half"));
console.log(JSON.stringify(w.finish({ plugin: "p", tool: "t" })));`,
  );
  const folder = join(dir.path, "results");
  await until(() => temps(folder).length === 1, 20_000, "the writer's temp file");
  const reaped = await cli(["reap"], { env: { CXAGENT_STATE_DIR: dir.path } });
  writeFileSync(join(dir.path, "reaped"), "");
  expect(reaped.code).toBe(0);
  expect(reaped.stdout).toContain(`removed: expired result ${old.ref}`);
  expect(reaped.stdout).not.toContain("cut short");
  const done = await finished(writer, 30_000, "the writer");
  expect(done.stderr).toBe("");
  const stored = JSON.parse(done.stdout.split("\n")[1]!);
  expect(store.text(stored.ref)).toBe("first half, second half");
  expect(existsSync(store.pathOf(old.sha256))).toBe(false);
  expect(temps(folder)).toEqual([]);
}, 60_000);

test("a writer killed (SIGKILL) in the middle of a spill: nothing under a result's name; its temp file goes at the next store's first write, and cxagent reap names it", async () => {
  using dir = tempDir();
  const folder = join(dir.path, "results");
  const spill = () =>
    child(
      dir.path,
      "endless-writer",
      `import { ResultStore } from ${JSON.stringify(STORE)};
const w = new ResultStore(${JSON.stringify(dir.path)}).begin();
const chunk = Buffer.alloc(1 << 20, 120);
for (let i = 0; ; i++) { w.write(chunk); if (i === 4) console.log("writing"); }`,
    );
  for (const cleaner of ["next store", "reap"] as const) {
    const writer = spill();
    const reader = writer.stdout.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("writing");
    writer.kill("SIGKILL"); // this test's own child, by its pid
    await writer.exited;
    const left = temps(folder);
    expect(left).toHaveLength(1);
    expect(statSync(join(folder, left[0]!)).size).toBeGreaterThanOrEqual(5 << 20);
    expect(readdirSync(folder).filter((n) => n.startsWith("sha256-"))).toEqual(cleaner === "reap" ? [`sha256-${sha("after")}`, `sha256-${sha("after")}.json`] : []);
    if (cleaner === "next store") {
      const store = new ResultStore(dir.path);
      const after = store.put("after", { plugin: "p", tool: "t" });
      expect(temps(folder)).toEqual([]);
      expect(store.text(after.ref)).toBe("after");
    } else {
      const dry = await cli(["reap", "--dry-run"], { env: { CXAGENT_STATE_DIR: dir.path } });
      expect(dry.stdout).toContain(`would remove: ${join(folder, left[0]!)}, a result write cut short (the process writing it ended)`);
      expect(temps(folder)).toHaveLength(1);
      const reaped = await cli(["reap"], { env: { CXAGENT_STATE_DIR: dir.path } });
      expect(reaped.code).toBe(0);
      expect(reaped.stdout).toContain(`removed: ${join(folder, left[0]!)}, a result write cut short (the process writing it ended)`);
      expect(temps(folder)).toEqual([]);
    }
  }
  expect(readFileSync(join(folder, `sha256-${sha("after")}`), "utf8")).toBe("after");
}, 90_000);
