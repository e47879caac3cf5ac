/**
 * Large results through the CLI (issue 41): --max-output and the default cap on a terminal, a 50 MB
 * answer delivered as a preview and a reference with the parent's memory bounded, `cxagent result`
 * giving the exact bytes at offsets, and `cxagent reap` removing expired results.
 */
import { beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { approve, cli, fixture, ROOT, STATE_DIR, tty } from "../helpers.ts";

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
/** What big-reply.c answers for `tag` and `bytes`: letters from 'a' + tag, round the alphabet. */
function letters(bytes: number, tag = 0): Buffer {
  const out = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) out[i] = 97 + ((tag + i) % 26);
  return out;
}

beforeAll(async () => {
  await approve(fixture("big-reply"));
});

/** Runs the CLI and reads its peak resident memory (VmHWM) while it runs; kB. */
async function cliPeak(args: string[]): Promise<{ stdout: string; code: number; peakKb: number }> {
  const proc = Bun.spawn({
    cmd: [process.execPath, join(ROOT, "src/main.ts"), ...args],
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", CXAGENT_STATE_DIR: STATE_DIR, CXAGENT_CONFIG_DIR: join(STATE_DIR, "..", "config") },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  let peakKb = 0;
  const poll = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // gone
    }
  }, 5);
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  clearInterval(poll);
  return { stdout, code, peakKb };
}

test("50 MB with --max-output 100000: a preview and a reference; cxagent result gives the exact bytes at offsets and the SHA-256 matches", async () => {
  const total = 50_000_000;
  const base = await cliPeak(["invoke", fixture("big-reply"), "big_reply", "--args", JSON.stringify({ bytes: 10 })]);
  const run = await cliPeak(["invoke", fixture("big-reply"), "big_reply", "--args", JSON.stringify({ bytes: total, tag: 7 }), "--max-output", "100000"]);
  expect(run.code).toBe(0);
  console.log(`50 MB capped: parent peak RSS ${(run.peakKb / 1024).toFixed(0)} MiB, baseline ${(base.peakKb / 1024).toFixed(0)} MiB`);
  expect(run.peakKb - base.peakKb).toBeLessThan(200 * 1024);
  expect(Buffer.byteLength(run.stdout)).toBeLessThanOrEqual(100_001); // and the newline
  const full = letters(total, 7);
  const hex = sha(full);
  const ref = `cxref:sha256-${hex}`;
  expect(run.stdout).toContain(`bytes left out. The whole result is ${ref} (SHA-256 ${hex})`);
  expect(full.subarray(0, 100).toString()).toBe(run.stdout.slice(0, 100));

  for (const [offset, length] of [[0, 1000], [12_345_678, 4096], [total - 10, 10], [total - 5, 100]] as const) {
    const part = await cli(["result", ref, "--offset", String(offset), "--length", String(length)]);
    expect(part.code).toBe(0);
    expect(part.stdout).toBe(full.subarray(offset, offset + length).toString());
  }
  const json = await cli(["result", ref, "--offset", "49999990", "--json"]);
  expect(json.json()).toMatchObject({ ref, sha256: hex, bytes: total, offset: 49_999_990, length: 10, more: false, plugin: "big-reply", tool: "big_reply", text: full.subarray(49_999_990).toString() });
  const whole = Bun.spawn({ cmd: [process.execPath, join(ROOT, "src/main.ts"), "result", ref], env: { ...process.env, CXAGENT_STATE_DIR: STATE_DIR }, stdout: "pipe" });
  expect(sha(new Uint8Array(await new Response(whole.stdout).arrayBuffer()))).toBe(hex);
}, 180_000);

test("--json gets the whole result, and with --max-output the envelope's result says spilled; bad values and unknown references by name", async () => {
  const whole = await cli(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 300000}', "--json"]);
  expect(whole.json().result.output.content).toHaveLength(300_000);
  expect(whole.json().result.spilled).toBeUndefined();
  const capped = await cli(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 300000}', "--json", "--max-output", "2000"]);
  const full = letters(300_000);
  expect(capped.json().result.spilled).toEqual({ truncated: true, bytes: 300_000, sha256: sha(full), ref: `cxref:sha256-${sha(full)}` });
  expect(Buffer.byteLength(capped.json().result.output.content)).toBeLessThanOrEqual(2000);
  const piped = await cli(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 300000}']);
  expect(piped.stdout).toBe(`${full.toString()}\n`); // a pipe gets all of it
  const bad = await cli(["invoke", fixture("big-reply"), "big_reply", "--max-output", "12"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--max-output takes a number of bytes, at least 1024, or 0 for all, not '12'");
  const unknown = await cli(["result", `cxref:sha256-${"1".repeat(64)}`]);
  expect(unknown.code).toBe(3);
  expect(unknown.stderr).toContain(`result cxref:sha256-${"1".repeat(64)} is not in ${join(STATE_DIR, "results")}`);
  expect((await cli(["result", "cxref:nope"])).code).toBe(3);
  expect((await cli(["result", `cxref:sha256-${sha(full)}`, "--offset", "-1"])).code).toBe(2);
}, 120_000);

test("on a terminal the default cap is 100 KiB: a head, the line, a tail", async () => {
  const r = await tty(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 300000}'], []);
  expect(r.code).toBe(0);
  expect(r.output).toContain(`bytes left out. The whole result is cxref:sha256-${sha(letters(300_000))}`);
  expect(r.output.length).toBeLessThan(110_000);
}, 60_000);

test("cxagent reap removes results unused for 7 days", async () => {
  const made = await cli(["invoke", fixture("big-reply"), "big_reply", "--args", '{"bytes": 5000, "tag": 9}', "--json", "--max-output", "1024"]);
  const { ref, sha256 } = made.json().result.spilled;
  const file = join(STATE_DIR, "results", `sha256-${sha256}`);
  const old = new Date(Date.now() - 8 * 24 * 3_600_000);
  utimesSync(file, old, old);
  const dry = await cli(["reap", "--dry-run"]);
  expect(dry.stdout).toContain(`would remove: expired result ${ref}`);
  const reaped = await cli(["reap"]);
  expect(reaped.stdout).toContain(`removed: expired result ${ref}`);
  expect((await cli(["result", ref])).code).toBe(3);
}, 60_000);
