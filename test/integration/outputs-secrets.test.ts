/**
 * Issue 41 with issue 40: where a plugin has secrets, what is spilled to the result store is the
 * redacted text, whether the reply was spilled while it was read or parsed whole first; no file
 * of the store ever holds the value.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/session/session.ts";
import { copyFixture, tempDir } from "../helpers.ts";
import { encodings, leaks, MARKER, SECRET } from "../secrets-helpers.ts";

let dir: { path: string } & Disposable;
let folder: string;
let configDir: string;
let stateDir: string;

beforeAll(() => {
  dir = tempDir();
  folder = copyFixture("secret-leaker", dir.path);
  configDir = join(dir.path, "config");
  stateDir = join(dir.path, "state");
  const secretFile = join(dir.path, "token");
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "secret-leaker": { file: "secret-leaker.so", path: folder, secrets: { "github.token": { file: secretFile } } } } }));
});
afterAll(() => dir[Symbol.dispose]());

/** Every file in the result store, as text: none may hold any form of the secret. */
function storeLeaks(): string[] {
  const results = join(stateDir, "results");
  return readdirSync(results).flatMap((name) => leaks(readFileSync(join(results, name), "latin1")));
}

test("a 3 MiB answer spilled while it is read: the store, the head and the tail hold the marker, never the value", async () => {
  await using session = await Session.open({ configDir, stateDir, cwd: dir.path, confirmTrust: async () => true });
  const plugin = await session.load(folder);
  const bytes = 3 << 20;
  const result = await plugin.invoke("leak_big", { bytes }, { maxOutputBytes: 100_000 });
  expect(result.spilled?.truncated).toBe(true);
  const content = result.output.content as string;
  expect(leaks(content)).toEqual([]);
  expect(content.endsWith(MARKER)).toBe(true);
  const stored = session.results.text(result.spilled!.ref);
  expect(leaks(stored)).toEqual([]);
  const times = Math.ceil((bytes - SECRET.length) / 100_003) + 1;
  expect(stored.split(MARKER).length - 1).toBe(times);
  expect(stored.length).toBe(bytes + times * (MARKER.length - SECRET.length));
  expect(storeLeaks()).toEqual([]);
  expect(encodings().length).toBeGreaterThan(5);
}, 60_000);

test("an answer read in one piece and capped after it was parsed: redacted before it is stored too", async () => {
  await using session = await Session.open({ configDir, stateDir, cwd: dir.path, confirmTrust: async () => true });
  const plugin = await session.load(folder);
  const result = await plugin.invoke("leak_big", { bytes: 3000 }, { maxOutputBytes: 1024 });
  expect(result.spilled?.truncated).toBe(true);
  expect(leaks(session.results.text(result.spilled!.ref))).toEqual([]);
  expect(session.results.text(result.spilled!.ref).endsWith(MARKER)).toBe(true);
  expect(storeLeaks()).toEqual([]);
}, 60_000);
