/**
 * Issue 40 through the library, with a real compiled attacker (test/fixtures/secret-leaker.c):
 * its secret reaches it only when asked, and every way it tries to send the value back out —
 * raw and encoded, structured fields, errors, progress, logs, a stream split in two, stderr, a
 * crash — arrives as [REDACTED:github.token]; /proc/<host>/environ and cmdline never hold it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Session } from "../../src/session/session.ts";
import type { CallEvent } from "../../src/host/connection.ts";
import { copyFixture, hostsOf, refusal, tempDir } from "../helpers.ts";
import { leaks, MARKER, SECRET } from "../secrets-helpers.ts";
import { describeTrustRequest } from "../../src/cli/_trust-prompt.ts";
import { trustRequestOf } from "../../src/session/inspect.ts";

let dir: { path: string } & Disposable;
let folder: string;
let configDir: string;
let stateDir: string;
let secretFile: string;

function writeConfig(binding: Record<string, unknown>) {
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ plugins: { "secret-leaker": { file: "secret-leaker.so", path: folder, secrets: binding } } }));
}

beforeAll(() => {
  dir = tempDir();
  folder = copyFixture("secret-leaker", dir.path);
  configDir = join(dir.path, "config");
  stateDir = join(dir.path, "state");
  secretFile = join(dir.path, "token");
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  writeConfig({ "github.token": { file: secretFile } });
});
afterAll(() => dir[Symbol.dispose]());

async function open(extra: { cwd?: string } = {}) {
  const said: string[] = [];
  const session = await Session.open({
    configDir,
    stateDir,
    cwd: extra.cwd ?? dir.path,
    confirmTrust: async () => true,
    onLog: (_p, _l, text) => said.push(text),
    onOutput: (_p, line) => said.push(line),
  });
  return { session, said };
}

test("every way out the plugin tries carries the marker, never the value; its host's environ and cmdline never hold it", async () => {
  const { session, said } = await open();
  await using _ = session;
  const plugin = await session.load(folder);
  const events: CallEvent[] = [];
  const result = await plugin.invoke("leak_forms", {}, { onEvent: (e) => events.push(e) });
  expect(result.success).toBe(true);
  const content = String((result.output as { content: string }).content);
  // each encoding the plugin made became the marker, in its place
  expect(content).toBe(`raw ${MARKER}|std ${MARKER}|stdnp ${MARKER}|url ${MARKER}|urlnp ${MARKER}|hex ${MARKER}|HEX ${MARKER}|pct ${MARKER}`);
  expect((result.output as { structuredContent: unknown }).structuredContent).toEqual({ token: MARKER, nested: [MARKER] });
  // the stream, split in two chunks by the plugin, arrives whole as the marker
  const streamed = events.filter((e) => e.event === "stream").map((e) => (e as { text: string }).text).join("");
  expect(streamed).toBe(`streamed: ${MARKER} done ghp_`);
  expect(events.find((e) => e.event === "progress")).toMatchObject({ text: MARKER });
  expect(events.filter((e) => e.event === "log").map((e) => (e as { text: string }).text)).toEqual([MARKER, MARKER]);
  const error = await plugin.invoke("leak_error");
  expect(error.errorMessage).toBe(`failed with ${MARKER} and ${MARKER}`);
  const failed = await refusal(plugin.invoke("fail_call"));
  expect(failed.message).toContain(`cannot go on with ${MARKER}`);
  // the host is alive: what the kernel shows of it
  const hosts = hostsOf(join(folder, "secret-leaker.so"));
  expect(hosts.length).toBeGreaterThan(0);
  for (const pid of hosts) {
    expect(leaks(readFileSync(`/proc/${pid}/environ`, "latin1"))).toEqual([]);
    expect(leaks(readFileSync(`/proc/${pid}/cmdline`, "latin1"))).toEqual([]);
  }
  const crash = await refusal(plugin.invoke("crash"));
  expect(crash.code).toBe("E_CRASHED");
  expect(crash.message).toContain(`leaker: dying with ${MARKER}`);
  const everything = JSON.stringify({ result, events, error, failed: failed.message, crash: crash.message, said });
  expect(leaks(everything)).toEqual([]);
  expect(said.join("\n")).toContain(`leaker: my token is ${MARKER}`);
}, 30_000);

test("a name the sidecar does not declare, one nobody bound, and a buffer too small each get their code, and the log says why", async () => {
  const { session, said } = await open();
  await using _ = session;
  const plugin = await session.load(folder);
  const code = async (tool: string) => String((await plugin.invoke(tool)).output?.content);
  expect(await code("ask_undeclared")).toBe("code -1");
  expect(await code("ask_unbound")).toBe("code -2");
  expect(await code("ask_small")).toBe("code -3");
  expect(said.join("\n")).toContain("asked for secret 'other.key', which its manifest does not declare (it declares github.token, unbound.key)");
  expect(said.join("\n")).toContain("asked for secret 'unbound.key', which is not bound");
}, 30_000);

test("a call whose arguments hold the marker is refused before its gate and its plugin", async () => {
  const { session } = await open();
  await using _ = session;
  const plugin = await session.load(folder);
  const echoed = await refusal(plugin.invoke("leak_forms", { note: { body: `token: ${MARKER}` } }));
  expect(echoed.code).toBe("E_REDACTED_ECHO");
  expect(echoed.message).toContain("at note.body");
  expect(echoed.message).toContain("the model sent back a value cxagent redacted");
  expect((await refusal(plugin.gate("leak_forms", [MARKER]))).code).toBe("E_REDACTED_ECHO");
}, 30_000);

test("a file others may read, a value under 8 bytes, and an unset variable are refused at use, naming why", async () => {
  const loose = join(dir.path, "loose");
  writeFileSync(loose, SECRET);
  chmodSync(loose, 0o644);
  const short = join(dir.path, "short");
  writeFileSync(short, "1234567\n", { mode: 0o600 });
  for (const [binding, why] of [
    [{ file: loose }, `the file ${loose} has mode 0644: others may read or change it; run chmod 600 ${loose}`],
    [{ file: short }, "its value is 7 bytes long, shorter than the 8 a secret must have"],
    [{ env: "CXAGENT_TEST_NO_SUCH_VARIABLE" }, "the environment variable CXAGENT_TEST_NO_SUCH_VARIABLE is not set"],
    [{ command: ["false"] }, "command false exited with 1"],
  ] as const) {
    writeConfig({ "github.token": binding });
    const { session, said } = await open();
    await using _ = session;
    const plugin = await session.load(folder);
    const result = await plugin.invoke("leak_forms");
    expect(result.errorMessage).toBe("no secret: code -4");
    expect(said.join("\n")).toContain(why);
  }
  writeConfig({ "github.token": { file: secretFile } });
}, 60_000);

test("a command binding runs without a shell, its stdout the value; an env binding is read by cxagent and never passed on", async () => {
  const passed = process.env.CXAGENT_PASS_ENV;
  try {
    for (const binding of [{ command: ["printf", "%s\\n", SECRET] }, { env: "CXAGENT_TEST_TOKEN" }]) {
      if ("env" in binding) {
        process.env.CXAGENT_TEST_TOKEN = SECRET;
        // Named for passing on, too: a variable a secret is bound to still never reaches a plugin host.
        process.env.CXAGENT_PASS_ENV = `${passed},CXAGENT_TEST_TOKEN`;
      }
      writeConfig({ "github.token": binding });
      const { session, said } = await open();
      await using _ = session;
      const plugin = await session.load(folder);
      const result = await plugin.invoke("leak_forms");
      expect(String(result.output?.content)).toStartWith(`raw ${MARKER}|`);
      const hosts = hostsOf(join(folder, "secret-leaker.so"));
      expect(hosts.length).toBeGreaterThan(0);
      for (const pid of hosts) expect(leaks(readFileSync(`/proc/${pid}/environ`, "latin1"))).toEqual([]);
      expect(leaks(said.join("\n"))).toEqual([]);
    }
  } finally {
    delete process.env.CXAGENT_TEST_TOKEN;
    process.env.CXAGENT_PASS_ENV = passed;
    writeConfig({ "github.token": { file: secretFile } });
  }
}, 60_000);

test("a project's config may remove a binding, and is refused by its JSON path when it adds one", async () => {
  const project = join(dir.path, "project");
  mkdirSync(join(project, ".cxagent"), { recursive: true });
  const projectFile = join(project, ".cxagent", "config.json");
  writeFileSync(projectFile, JSON.stringify({ plugins: { "secret-leaker": { secrets: { "github.token": false } } } }));
  {
    const { session, said } = await open({ cwd: project });
    await using _ = session;
    const plugin = await session.load(folder);
    expect((await plugin.invoke("leak_forms")).errorMessage).toBe("no secret: code -2");
    expect(said.join("\n")).toContain(`none: ${projectFile} removes it`);
  }
  writeFileSync(projectFile, JSON.stringify({ plugins: { "secret-leaker": { secrets: { "github.token": { file: secretFile } } } } }));
  const refused = await refusal(open({ cwd: project }));
  expect(refused.code).toBe("E_CONFIG");
  expect(refused.message).toContain(`plugins["secret-leaker"].secrets["github.token"]`);
  expect(refused.message).toContain("a project can remove a secret's binding (false), never add one");
}, 30_000);

test("the trust prompt shows what the plugin may ask for, from the approved sidecar", async () => {
  const { session } = await open();
  await using _ = session;
  expect(describeTrustRequest(trustRequestOf(session.inspect(folder)))).toContain(
    "  secrets       may ask for: github.token — a token it promises to keep; unbound.key — nobody binds this one",
  );
});
