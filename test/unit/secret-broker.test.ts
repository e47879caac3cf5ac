/** The session's secrets (issue 40): bindings less what the project removes, resolved once when asked, taught to the redactor, refused by code. */
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../src/discovery/config.ts";
import { parseProjectConfig } from "../../src/discovery/project-config.ts";
import { SecretBroker } from "../../src/secrets/broker.ts";
import { tempDir } from "../helpers.ts";

const declared = [
  { name: "github.token", description: "the token" },
  { name: "other", description: "another" },
  { name: "constructor", description: "a name that is also an object's key" },
];

function broker(dir: string, project?: Record<string, unknown>) {
  writeFileSync(join(dir, "tok"), "file-token-1\n", { mode: 0o600 });
  const config = parseConfig(
    {
      plugins: {
        gh: { file: "gh.so", secrets: { "github.token": { file: join(dir, "tok") }, other: { command: ["sh", "-c", `echo run >> ${join(dir, "runs")}; exit 1`] } } },
        gl: { file: "gl.so", secrets: { "github.token": { env: "GL_TOKEN" } } },
      },
    },
    "/c/config.json",
  );
  const projectConfig = project ? parseProjectConfig(project, "/p/.cxagent/config.json", { config, path: "/c/config.json", gateMs: 10_000 }) : null;
  return new SecretBroker({ config, configFile: "/c/config.json", project: projectConfig, env: { GL_TOKEN: "env-token-22" } });
}

test("each declared name with its binding in words, or why there is none (unbound, the project removes it, a name that is an object's key)", () => {
  using dir = tempDir();
  const b = broker(dir.path, { plugins: { gh: { secrets: { other: false } } } });
  expect(b.bindings("gh", declared)).toEqual([
    { name: "github.token", description: "the token", binding: { file: join(dir.path, "tok") }, bindingText: `file ${join(dir.path, "tok")}`, removedBy: null },
    { name: "other", description: "another", binding: null, bindingText: "none: /p/.cxagent/config.json removes it", removedBy: "/p/.cxagent/config.json" },
    { name: "constructor", description: "a name that is also an object's key", binding: null, bindingText: `none: add "secrets": {"constructor": {"file": …}} to plugins.gh in /c/config.json`, removedBy: null },
  ]);
  expect(b.bindings(undefined, declared.slice(0, 1))[0]!.bindingText).toBe(`none: add "secrets": {"github.token": {"file": …}} to plugins.<name> in /c/config.json`);
  expect(b.bindings("nobody", declared.slice(0, 1))[0]!.binding).toBeNull();
  // Without a project config, or one that says nothing of this plugin: the user's binding stands.
  expect(broker(dir.path).bindings("gh", declared)[1]!.binding).toEqual({ command: ["sh", "-c", `echo run >> ${join(dir.path, "runs")}; exit 1`] });
  expect(broker(dir.path, { plugins: { gl: { secrets: { other: false } } } }).bindings("gh", declared)[1]!.removedBy).toBeNull();
});

test("a plugin host asks: the value for a declared, bound name; by code and words otherwise; a value resolved once per session, a failure too", async () => {
  using dir = tempDir();
  const b = broker(dir.path);
  const access = b.accessFor("gh-plugin", "gh", declared);
  expect(access.redactor).toBe(b.redactor);
  expect(b.redactor.active).toBe(false);
  const got = await access.request("github.token");
  expect(got.ok && Buffer.from(got.value).toString()).toBe("file-token-1");
  // Taught to the redactor the moment it resolved.
  expect(b.redactor.text("x file-token-1 y")).toBe("x [REDACTED:github.token] y");
  writeFileSync(join(dir.path, "tok"), "changed-token\n", { mode: 0o600 });
  const again = await access.request("github.token");
  expect(again.ok && Buffer.from(again.value).toString()).toBe("file-token-1");

  expect(await access.request("nope")).toEqual({ ok: false, code: "undeclared", message: "plugin 'gh-plugin' asked for secret 'nope', which its manifest does not declare (it declares github.token, other, constructor)" });
  expect(await b.accessFor("bare", "gh", []).request("nope")).toEqual({ ok: false, code: "undeclared", message: "plugin 'bare' asked for secret 'nope', which its manifest does not declare (it declares none)" });
  expect(await access.request("constructor")).toEqual({ ok: false, code: "unbound", message: `plugin 'gh-plugin' asked for secret 'constructor', which is not bound: none: add "secrets": {"constructor": {"file": …}} to plugins.gh in /c/config.json` });
  const failed = await access.request("other");
  expect(failed).toEqual({ ok: false, code: "unavailable", message: `plugin 'gh-plugin' asked for secret 'other' (command sh -c "echo run >> ${join(dir.path, "runs")}; exit 1"), which did not resolve: command sh -c "echo run >> ${join(dir.path, "runs")}; exit 1" exited with 1` });
  await access.request("other");
  expect(readFileSync(join(dir.path, "runs"), "utf8")).toBe("run\n"); // the failing command ran once

  // Another plugin's entry binds the same name to another value: its own, resolved apart.
  const gl = await b.accessFor("gl-plugin", "gl", declared.slice(0, 1)).request("github.token");
  expect(gl.ok && Buffer.from(gl.value).toString()).toBe("env-token-22");
  expect(b.redactor.text("file-token-1 env-token-22")).toBe("[REDACTED:github.token] [REDACTED:github.token]");
});

test("resolve() of a secret with no binding answers why, and resolves nothing", async () => {
  using dir = tempDir();
  const b = broker(dir.path, { plugins: { gh: { secrets: { "github.token": false } } } });
  const [secret] = b.bindings("gh", declared);
  expect(await b.resolve("gh", secret!)).toEqual({ ok: false, message: "none: /p/.cxagent/config.json removes it" });
  expect(b.redactor.active).toBe(false);
});
