/**
 * Plugin text is inert on a terminal (SPEC §6.3): every string from a plugin or its folder —
 * sidecar fields, file names, the README, what it streams, logs, reports, answers and writes to
 * stderr — reaches a real pseudo-terminal with its escape sequences shown as text; the views made
 * for people (describe, list) escape their plugin fields into a pipe too. NO_COLOR is set, so
 * cxagent adds no escapes of its own to these views: any ESC byte would be the plugin's.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, copyFixture, tempDir, tty } from "../helpers.ts";

function world(dir: string) {
  const env = { CXAGENT_CONFIG_DIR: join(dir, "config"), CXAGENT_STATE_DIR: join(dir, "state") };
  const plugins = join(dir, "config", "plugins");
  mkdirSync(plugins, { recursive: true });
  const plugin = copyFixture("hostile-text", plugins);
  // a README that clears the screen, a file whose name recolours and hides, and a stray sidecar
  // whose file name tries to add a prompt line (it has no library, so it is no plugin at all)
  writeFileSync(join(plugin, "README.md"), "\x1b[2J\x1b[3J\x1b[H# Totally safe\n\nNothing to see.\x1b[8m hidden\n");
  writeFileSync(join(plugin, "note\x1b[31m\x1b[8m.txt"), "x");
  writeFileSync(join(plugin, "x\n  processes     starts none.plugin.json"), "{}");
  return { env, plugin };
}

const ESC = "\x1b";

describe("the views of a plugin on a terminal carry no escape sequence of the plugin's", () => {
  test("describe", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await tty(["describe", "hostile-text"], [], { env });
    expect(r.code).toBe(0);
    expect(r.raw).not.toContain(ESC);
    expect(r.output).toContain("hostile-text 1.0.0\\x1b[2J\\x1b[H  (contract 4)");
    expect(r.output).toContain("shout  — \\x1b[1A\\x1b[2K  processes     starts none");
    expect(r.output).toContain("fails \\u202eevil");
    expect(r.output).toContain("/say\\x1b[31m  — \\x1b[8mhidden");
    expect(r.output).toContain("\\x1b]0;retitled\\x07Be careful.");
    expect(r.output).toContain("\\x1b[2J\\x1b[3J\\x1b[H# Totally safe\n\nREADME: "); // the README's first paragraph
    const whole = await tty(["describe", "hostile-text", "--readme"], [], { env });
    expect(whole.raw).not.toContain(ESC);
    expect(whole.output).toContain("\\x1b[2J\\x1b[3J\\x1b[H# Totally safe\n\nNothing to see.\\x1b[8m hidden"); // the whole README
  });

  test("approve: the trust prompt", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await tty(["approve", "hostile-text"], [{ after: "[y/N]", send: "n" }], { env });
    expect(r.code).toBe(4);
    expect(r.raw).not.toContain(ESC);
    expect(r.output).toContain("Plugin hostile-text 1.0.0\\x1b[2J\\x1b[H has not been approved yet.");
    expect(r.output).toContain("  processes     starts processes of its own");
    expect(r.output).not.toMatch(/^ {2}processes {5}starts none/m);
    expect(r.output).toContain("  shares folder with no other plugin");
    expect(r.output).toContain("  asks          depending on the arguments: asks");
  });

  test("list, and the changed files it names", async () => {
    using dir = tempDir();
    const { env, plugin } = world(dir.path);
    const hash = (await cli(["describe", "hostile-text", "--json"], { env })).json().hash;
    expect((await cli(["approve", "hostile-text", "--hash", hash], { env })).code).toBe(0);
    writeFileSync(join(plugin, "new\x1b]0;t\x07.txt"), "added after approval");
    const r = await tty(["list"], [], { env });
    expect(r.code).toBe(0);
    expect(r.raw).not.toContain(ESC);
    expect(r.output).toContain("hostile-text 1.0.0\\x1b[2J\\x1b[H  CHANGED since approval");
    expect(r.output).toContain("changed  added: new\\x1b]0;t\\x07.txt");
  });

  test("--json stays exact JSON: the plugin's strings as they are", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const r = await cli(["describe", "hostile-text", "--json"], { env });
    expect(r.json().manifest.version).toBe("1.0.0\x1b[2J\x1b[H");
    expect(r.json().readme).toStartWith("\x1b[2J");
  });
});

describe("a view escapes its plugin fields wherever it goes: into a pipe too", () => {
  test("describe and list", async () => {
    using dir = tempDir();
    const { env, plugin } = world(dir.path);
    const described = await cli(["describe", "hostile-text"], { env });
    expect(described.code).toBe(0);
    expect(described.stdout).not.toContain(ESC);
    expect(described.stdout).toContain("hostile-text 1.0.0\\x1b[2J\\x1b[H  (contract 4)");
    expect(described.stdout).toContain("\\x1b[2J\\x1b[3J\\x1b[H# Totally safe"); // the README
    const whole = await cli(["describe", "hostile-text", "--readme"], { env });
    expect(whole.stdout).not.toContain(ESC);
    expect(whole.stdout).toContain("Nothing to see.\\x1b[8m hidden"); // the whole README
    const hash = (await cli(["describe", "hostile-text", "--json"], { env })).json().hash;
    expect((await cli(["approve", "hostile-text", "--hash", hash], { env })).code).toBe(0);
    writeFileSync(join(plugin, "new\x1b]0;t\x07.txt"), "added after approval");
    const listed = await cli(["list"], { env });
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(ESC);
    expect(listed.stdout).toContain("hostile-text 1.0.0\\x1b[2J\\x1b[H  CHANGED since approval");
    expect(listed.stdout).toContain("changed  added: new\\x1b]0;t\\x07.txt");
  });
});

describe("what a running plugin says reaches the terminal inert", () => {
  // cxagent's own escape on a terminal: the progress line is cleared and redrawn with "\r\x1b[K"
  const withoutOurs = (raw: string) => raw.replaceAll("\r\x1b[K", "");

  test("streamed text, logs, progress, its stderr and its output", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const hash = (await cli(["describe", "hostile-text", "--json"], { env })).json().hash;
    await cli(["approve", "hostile-text", "--hash", hash], { env });
    const r = await tty(["invoke", "hostile-text", "shout", "--verbose"], [], { env });
    expect(r.code).toBe(0);
    expect(withoutOurs(r.raw)).not.toContain(ESC);
    expect(r.raw).not.toContain("\u009b"); // nor a C1 control sequence introducer
    for (const text of ["\\x1b[2J\\x1b[Hstreamed", "\\x1b[31mred log\\x1b]0;title\\x07", "\\x1b[2J\\x1b[Hlog outside a call", "\\x1b[5mblinking progress", "\\x1b[2J\\x1b[Hstderr line", "\\x1b[2J\\x1b[Hcontent\\x9b31m"]) {
      expect(r.output).toContain(text);
    }
  });

  test("a tool's error, its failed envelope, a gate's display, a command's message", async () => {
    using dir = tempDir();
    const { env } = world(dir.path);
    const hash = (await cli(["describe", "hostile-text", "--json"], { env })).json().hash;
    await cli(["approve", "hostile-text", "--hash", hash], { env });
    const failed = await tty(["invoke", "hostile-text", "fail"], [], { env });
    expect(failed.code).toBe(1);
    expect(withoutOurs(failed.raw)).not.toContain(ESC);
    expect(failed.output).toContain("fail failed: \\x1b[2J\\x1b[Hfailed\nhint: run rm -rf");
    const refused = await tty(["invoke", "hostile-text", "fail", "--args", '{"envelope": 1}'], [], { env });
    expect(refused.code).toBe(5);
    expect(withoutOurs(refused.raw)).not.toContain(ESC);
    expect(refused.output).toContain("fail failed: \\x1b[2J\\x1b[Hrefused");
    const gate = await tty(["gate", "hostile-text", "asks"], [], { env });
    expect(gate.raw).not.toContain(ESC);
    expect(gate.output).toContain('"\\x1b[2J\\x1b[Hdelete nothing\n    o = allow once, a = always, d = deny"');
    const asked = await tty(["invoke", "hostile-text", "asks"], [{ after: "Allow this call?", send: "n" }], { env });
    expect(withoutOurs(asked.raw)).not.toContain(ESC);
    // the plugin's fake legend is indented under its display; ours follows at the start of a line
    expect(asked.output).toContain("\\x1b[2J\\x1b[Hdelete nothing\n    o = allow once, a = always, d = deny\ny = allow once, a = always allow plugin hostile-text tool asks in this project, n = deny\nAllow this call? [y/a/N] deny");
    const said = await tty(["command", "hostile-text", "say\x1b[31m"], [], { env });
    expect(said.code).toBe(0);
    expect(withoutOurs(said.raw)).not.toContain(ESC);
    expect(said.output).toContain("\\x1b[2J\\x1b[Hsaid");
  });
});
