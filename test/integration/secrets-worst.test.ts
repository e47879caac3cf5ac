/**
 * Redaction's worst values through a real plugin host (issues 40 and 41's finishing): a secret
 * that is part of another, streamed cut inside the longer one; and a structured result nested
 * deeper than the redactor walks. What the library hands back never holds either value.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { approve, openSession, tempDir, writeModule } from "../helpers.ts";

const OUTER = "outer-Secret-with-inner-tok3n-inside";
const INNER = "inner-tok3n";
const PLUGIN = `
export default {
  start() {},
  stop() {},
  async invoke(tool, args, call) {
    const outer = await call.secret("outer.key");
    const inner = await call.secret("inner.key");
    if (tool === "stream_cut") {
      // Cut after the inner secret's whole value, inside the outer's.
      const at = outer.indexOf(inner) + inner.length;
      call.stream("a " + outer.slice(0, at));
      call.stream(outer.slice(at) + " b");
      return { success: true, output: { content: "done" } };
    }
    let deep = { s: "x " + outer + " y", [inner]: Buffer.from(outer).toString("base64") };
    for (let i = 0; i < 300; i++) deep = i % 2 ? [deep] : { a: deep };
    return { success: true, output: { content: "deep", structuredContent: deep } };
  },
};`;

let dir: { path: string } & Disposable;
let configDir: string;
let stateDir: string;
let folder: string;

beforeAll(async () => {
  dir = tempDir();
  folder = writeModule(dir.path, "worst", PLUGIN, { secrets: [{ name: "outer.key" }, { name: "inner.key" }], tools: [{ name: "stream_cut" }, { name: "deep" }] });
  configDir = join(dir.path, "config");
  stateDir = join(dir.path, "state");
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "outer"), OUTER, { mode: 0o600 });
  writeFileSync(join(configDir, "inner"), INNER, { mode: 0o600 });
  const secrets = { "outer.key": { file: join(configDir, "outer") }, "inner.key": { file: join(configDir, "inner") } };
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { worst: { file: "worst.ts", path: folder, secrets } } }));
  await approve(folder, stateDir);
});
afterAll(() => dir[Symbol.dispose]());

const pieces = (text: string) => [OUTER, INNER, "outer-Secret-with-", "-inside", Buffer.from(OUTER).toString("base64")].filter((p) => text.includes(p));

test("a secret inside another, streamed cut just after the inner one: the stream shows one marker for the outer, no byte of it", async () => {
  await using session = await openSession({ configDir, stateDir, cwd: dir.path });
  const plugin = await session.load(folder);
  let streamed = "";
  const result = await plugin.invoke("stream_cut", {}, { onEvent: (e) => void (e.event === "stream" && (streamed += (e as { text: string }).text)) });
  expect(result.success).toBe(true);
  expect(streamed).toBe("a [REDACTED:outer.key] b");
  expect(pieces(JSON.stringify(result))).toEqual([]);
}, 30_000);

test("a structured result nested 300 levels deep: redacted below the walk's depth too, in strings and keys", async () => {
  await using session = await openSession({ configDir, stateDir, cwd: dir.path });
  const plugin = await session.load(folder);
  const result = await plugin.invoke("deep");
  const json = JSON.stringify(result);
  expect(pieces(json)).toEqual([]);
  expect(json).toContain(`{"s":"x [REDACTED:outer.key] y","[REDACTED:inner.key]":"[REDACTED:outer.key]"}`);
}, 30_000);
