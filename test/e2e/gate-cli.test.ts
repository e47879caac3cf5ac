/**
 * Permission through the CLI: `cxagent gate`, gated invokes with and without a terminal, --allow,
 * stored grants, and `cxagent grants`.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { approve, CALCULATOR, cli, fixture, tempDir, tty } from "../helpers.ts";

/** A project folder and a state folder of the test's own, with the calculator approved. */
async function world(dir: string) {
  const project = join(dir, "project");
  mkdirSync(project);
  const state = join(dir, "state");
  await approve(CALCULATOR, state);
  await approve(fixture("gates"), state);
  return { project, state, env: { CXAGENT_STATE_DIR: state } };
}

const grantsIn = (state: string) => JSON.parse(readFileSync(join(state, "permissions.json"), "utf8")).grants;

describe("cxagent gate", () => {
  test.each([
    ["calc_divide", '{"a":1,"b":2}', { ask: false, display: null, alwaysOffered: false, rule: null, source: "gate", granted: false, forcedBy: null }],
    ["calc_divide", '{"a":1,"b":0}', { ask: true, display: "calc_divide: divide 1 by zero", alwaysOffered: true, rule: "plugin calculator tool calc_divide", source: "gate", granted: false, forcedBy: null }],
    ["calc_multiply", '{"a":1,"b":2}', { ask: false, display: null, alwaysOffered: false, rule: null, source: "manifest", granted: false, forcedBy: null }],
    ["calc_add", '{"a":2,"b":3}', { ask: true, display: 'calculator wants to run calc_add with {"a":2,"b":3}', alwaysOffered: true, rule: "plugin calculator tool calc_add", source: "manifest", granted: false, forcedBy: null }],
  ])("%s %s", async (tool, args, expected) => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await cli(["gate", CALCULATOR, tool, "--args", args, "--json", "--cwd", project], { env });
    expect(r.code).toBe(0);
    expect(r.json()).toEqual(expected);
  });

  test("a failed gate, in words", async () => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await cli(["gate", fixture("gates"), "garbage", "--cwd", project], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith("garbage asks first (decided by a failed gate): \"gates wants to run garbage");
    expect(r.stdout).toContain("Always is not offered.");
  });
});

describe("a gated invoke without a terminal", () => {
  test("is denied by policy with exit 4, and never runs", async () => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await cli(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--json", "--cwd", project], { env });
    expect(r.code).toBe(4);
    const message = expect.stringContaining("calc_add was not run: it needs permission");
    expect(r.json()).toEqual({
      ok: false, // exit 4: cxagent denied it; the denied result is kept
      result: {
        success: false,
        exitCode: 0,
        errorMessage: message,
        permissionDenied: true,
        decidedBy: "policy",
        output: { content: expect.any(String) },
        logFile: null,
        durationMs: 0,
      },
      error: {
        code: "E_DENIED",
        message,
        hint: "there was no terminal to ask on; pass --allow to allow this one call",
        next: { do: "allow-call", plugin: "calculator", tool: "calc_add" },
        details: { decidedBy: "policy" },
      },
    });
    const human = await cli(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], { env });
    expect(human).toMatchObject({ code: 4, stdout: "" });
    expect(human.stderr).toContain("pass --allow to allow this one call");
  });

  test("--allow runs that one call and writes what was allowed to stderr", async () => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await cli(["invoke", CALCULATOR, "calc_divide", "--args", '{"a":4,"b":0}', "--allow", "--cwd", project], { env });
    expect(r.code).toBe(1); // it ran, and division by zero fails on its own terms
    expect(r.stderr).toContain("allowed by --allow: calc_divide: divide 4 by zero");
    expect((await cli(["invoke", CALCULATOR, "calc_divide", "--args", '{"a":4,"b":0}', "--cwd", project], { env })).code).toBe(4);
  });

  test("a stored grant is honoured; grants lists and revokes it", async () => {
    using dir = tempDir();
    const { env, project, state } = await world(dir.path);
    const prompt = await tty(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], [{ after: "Allow this call? [y/a/N]", send: "a" }], { env });
    expect(prompt.code).toBe(0);
    expect(grantsIn(state)).toEqual([{ scope: project, rule: "plugin calculator tool calc_add", folder: CALCULATOR, grantedAt: expect.any(String) }]);
    const again = await cli(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], { env });
    expect(again).toMatchObject({ code: 0, stdout: "2 + 3 = 5\n" });
    const listed = await cli(["grants", "--json", "--cwd", project], { env });
    expect(listed.json()).toEqual({ grants: grantsIn(state) });
    const revoked = await cli(["grants", "--revoke", "plugin calculator tool calc_add", "--json", "--cwd", project], { env });
    expect(revoked.json()).toEqual({ rule: "plugin calculator tool calc_add", scope: project, revoked: 1 });
    expect((await cli(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], { env })).code).toBe(4);
  });
});

describe("the permission prompt on a terminal", () => {
  test.each([
    ["y", 0, "allow once", []],
    ["n", 4, "deny", []],
    ["\r", 4, "deny", []],
    ["\x03", 130, "^C", []], // interrupted: nothing allowed, exit 130
    ["a", 0, "always", ["plugin calculator tool calc_add"]],
  ])("answering %j", async (key, code, echoed, rules) => {
    using dir = tempDir();
    const { env, project, state } = await world(dir.path);
    const r = await tty(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], [{ after: "[y/a/N]", send: key }], { env });
    expect(r.code).toBe(code);
    expect(r.output).toContain('calculator wants to run calc_add with {"a":2,"b":3}');
    expect(r.output).toContain("y = allow once, a = always allow plugin calculator tool calc_add in this project, n = deny");
    expect(r.output).toContain(`Allow this call? [y/a/N] ${echoed}`);
    if (code === 0) expect(r.output).toContain("2 + 3 = 5");
    else if (code === 130) expect(r.output).toContain("interrupted at the prompt: nothing was allowed or approved");
    else expect(r.output).toContain("calc_add was not run: permission was denied");
    const stored = rules.length ? grantsIn(state).map((g: { rule: string }) => g.rule) : [];
    expect(stored).toEqual(rules);
  });

  test("after Always it says what was stored, for which folder, where, and how to undo it (with the --cwd that scoped it)", async () => {
    using dir = tempDir();
    const { env, project, state } = await world(dir.path);
    const r = await tty(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], [{ after: "[y/a/N]", send: "a" }], { env });
    expect(r.code).toBe(0);
    expect(r.output).toContain(
      `Allow this call? [y/a/N] always\nalways: stored 'plugin calculator tool calc_add' for ${project} in ${join(state, "permissions.json")}; to remove it: ./bin/cxagent grants --revoke 'plugin calculator tool calc_add' --cwd ${project}\n2 + 3 = 5`,
    );
  });

  test("a key that answers nothing is answered on the screen, and the question asked again", async () => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await tty(["invoke", CALCULATOR, "calc_add", "--args", '{"a":2,"b":3}', "--cwd", project], [
      { after: "[y/a/N]", send: "x" },
      { after: "answers nothing", send: "y" },
    ], { env });
    expect(r.code).toBe(0);
    expect(r.output).toContain("Allow this call? [y/a/N] \n'x' answers nothing here: press y, a or n (Enter: deny)\nAllow this call? [y/a/N] allow once\n2 + 3 = 5");
  });

  test("Always is not offered where the plugin narrowed it", async () => {
    using dir = tempDir();
    const { env, project } = await world(dir.path);
    const r = await tty(["invoke", fixture("gates"), "asks_narrow", "--cwd", project], [
      { after: "Allow this call? [y/N]", send: "a" },
      { after: "answers nothing", send: "y" },
    ], { env });
    expect(r.code).toBe(0);
    expect(r.output).toContain("a sharp edge\ny = allow once, n = deny");
    expect(r.output).toContain("'a' answers nothing here: press y or n (Enter: deny)\nAllow this call? [y/N] allow once");
  });
});
