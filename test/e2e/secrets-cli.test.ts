/**
 * Issue 40 through the CLI, as a user and an attacker meet it: `cxagent secrets` lists bindings
 * and never a value; `invoke --json` and `--jsonl` never show the value in any form; a plugin whose
 * bytes changed gets nothing until approved again; and after it all, the state and config folders
 * hold the value only in the file it is bound to.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { approve, cli, copyFixture, tempDir } from "../helpers.ts";
import { leaks, MARKER, SECRET } from "../secrets-helpers.ts";
let dir: { path: string } & Disposable;
let folder: string;
let env: Record<string, string>;
let configDir: string;
let stateDir: string;
let tokenFile: string;

function writeConfig(secrets: Record<string, unknown>) {
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "secret-leaker": { file: "secret-leaker.so", path: folder, secrets } } }));
}

beforeAll(async () => {
  dir = tempDir();
  folder = copyFixture("secret-leaker", dir.path);
  configDir = join(dir.path, "config");
  stateDir = join(dir.path, "state");
  mkdirSync(configDir, { recursive: true });
  tokenFile = join(configDir, "github-token");
  writeFileSync(tokenFile, SECRET, { mode: 0o600 });
  writeConfig({ "github.token": { file: tokenFile } });
  env = { CXAGENT_CONFIG_DIR: configDir, CXAGENT_STATE_DIR: stateDir };
  await approve(folder, stateDir);
});
afterAll(() => dir[Symbol.dispose]());

/** Every file under `root` whose bytes hold SECRET in any form. */
function filesHolding(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = statSync(path);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else if (st.isFile() && leaks(readFileSync(path, "latin1")).length) found.push(path);
  };
  walk(root);
  return found;
}

test("cxagent secrets lists each declared name, its binding and whether it resolves, never the value", async () => {
  const text = await cli(["secrets", folder], { env });
  expect(text.code).toBe(0);
  expect(text.stdout).toContain(`github.token  a token it promises to keep\n  binding  file ${tokenFile}\n  resolves`);
  expect(text.stdout).toContain("unbound.key  nobody binds this one\n  binding  none: add");
  const json = await cli(["secrets", folder, "--json"], { env });
  expect(json.code).toBe(0);
  expect(json.json().secrets.map((s: { name: string; resolves: boolean }) => [s.name, s.resolves])).toEqual([["github.token", true], ["unbound.key", false]]);
  expect(leaks(text.stdout + text.stderr + json.stdout + json.stderr)).toEqual([]);
  chmodSync(tokenFile, 0o640);
  try {
    const loose = await cli(["secrets", folder, "--json"], { env });
    expect(loose.code).toBe(3);
    expect(loose.json().secrets[0].problem).toBe(`the file ${tokenFile} has mode 0640: others may read or change it; run chmod 600 ${tokenFile}`);
  } finally {
    chmodSync(tokenFile, 0o600);
  }
  const described = await cli(["describe", folder], { env });
  expect(described.stdout).toContain("secrets: may ask for: github.token — a token it promises to keep; unbound.key — nobody binds this one");
  const help = await cli(["secrets", "--help"], { env });
  expect(help.code).toBe(0);
  expect(help.stdout).toContain("never the value");
});

test("invoke --json and --jsonl show the marker wherever the plugin put the value, in any form", async () => {
  const json = await cli(["invoke", folder, "leak_forms", "--json"], { env });
  expect(json.code).toBe(0);
  expect(json.json().result.output.content).toStartWith(`raw ${MARKER}|std ${MARKER}|`);
  expect(json.json().result.output.structuredContent).toEqual({ token: MARKER, nested: [MARKER] });
  const lines = await cli(["invoke", folder, "leak_forms", "--jsonl"], { env });
  expect(lines.code).toBe(0);
  const events = lines.stdout.trim().split("\n").map((l) => JSON.parse(l));
  expect(events.filter((e) => e.event === "stream").map((e) => e.text).join("")).toBe(`streamed: ${MARKER} done ghp_`);
  expect(events.find((e) => e.event === "progress").text).toBe(MARKER);
  const failed = await cli(["invoke", folder, "leak_error", "--json"], { env });
  expect(failed.json().result.errorMessage).toBe(`failed with ${MARKER} and ${MARKER}`);
  const crashed = await cli(["invoke", folder, "crash", "--json"], { env });
  expect(crashed.code).toBe(5);
  expect(crashed.json().error.message).toContain(`leaker: dying with ${MARKER}`);
  const all = [json, lines, failed, crashed].map((r) => r.stdout + r.stderr).join("\n");
  expect(leaks(all)).toEqual([]);
  const echoed = await cli(["invoke", folder, "leak_forms", "--args", JSON.stringify({ token: MARKER }), "--json"], { env });
  expect(echoed.code).toBe(3);
  expect(echoed.json().error.code).toBe("E_REDACTED_ECHO");
}, 60_000);

test("a plugin whose bytes changed gets no secret until approved again", async () => {
  appendFileSync(join(folder, "secret-leaker.plugin.json"), "\n");
  const refused = await cli(["invoke", folder, "leak_forms", "--json"], { env });
  expect(refused.code).toBe(4);
  expect(refused.json().error.code).toBe("E_NOT_APPROVED");
  expect(leaks(refused.stdout + refused.stderr)).toEqual([]);
  await approve(folder, stateDir);
  const again = await cli(["invoke", folder, "leak_forms", "--json"], { env });
  expect(again.code).toBe(0);
  expect(again.json().result.output.content).toStartWith(`raw ${MARKER}|`);
}, 60_000);

test("a result over the delivery cap is stored whole, and the stored text holds the marker, not the value", async () => {
  const capped = await cli(["invoke", folder, "leak_lines", "--max-output", "1024", "--json"], { env });
  expect(capped.code).toBe(0);
  const spilled = capped.json().result.spilled;
  expect(spilled.truncated).toBe(true);
  const stored = await cli(["result", spilled.ref], { env });
  expect(stored.code).toBe(0);
  expect(stored.stdout).toContain(`line 79: ${MARKER} and ${MARKER}`);
  expect(leaks(capped.stdout + capped.stderr + stored.stdout + stored.stderr)).toEqual([]);
}, 60_000);

test("after every run, the state and config folders hold the value only in the file it is bound to", () => {
  expect(filesHolding(stateDir)).toEqual([]);
  expect(filesHolding(configDir)).toEqual([tokenFile]);
});
