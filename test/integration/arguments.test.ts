/**
 * Arguments are checked against the tool's inputSchema in the library, before the gate or the
 * plugin sees them, for every caller; a sidecar whose inputSchema is not a schema is refused; and
 * arguments nested deeper than the plugin host reads fail at once instead of hanging.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ARGUMENTS_DEPTH_LIMIT } from "../../src/json-schema/check.ts";
import { hostCommand } from "../../src/session/host-command.ts";
import { alive, cli, copyFixture, fixture, fixtureLibrary, openSession, refusal, ROOT, tempDir, within } from "../helpers.ts";

const TYPED = fixture("typed-arguments");

describe("a call's arguments against the tool's inputSchema", () => {
  test.each([
    [{}, "arguments for typed do not match its inputSchema: n: is required but missing (required)", [{ path: "n", rule: "required" }]],
    [{ n: 101 }, "arguments for typed do not match its inputSchema: n: 101 is greater than 100 (maximum)", [{ path: "n", rule: "maximum" }]],
    [{ n: 1.5 }, "arguments for typed do not match its inputSchema: n: is a number, must be an integer (type)", [{ path: "n", rule: "type" }]],
    [{ n: 1, items: [{ name: "a" }, {}] }, "arguments for typed do not match its inputSchema: items[1].name: is required but missing (required)", [{ path: "items[1].name", rule: "required" }]],
    [{ n: 1, extra: true }, "arguments for typed do not match its inputSchema: extra: is not allowed here (additionalProperties)", [{ path: "extra", rule: "additionalProperties" }]],
    [{ n: "x", flag: "maybe" }, "arguments for typed do not match its inputSchema: n: is a string, must be an integer (type); flag: is a string, must be a boolean (type)", [{ path: "n", rule: "type" }, { path: "flag", rule: "type" }]],
  ])("%j is E_INVALID_INPUT, exit 3, naming the path and the rule", async (args, message, problems) => {
    await using session = await openSession();
    const plugin = await session.load(TYPED);
    const error = await refusal(plugin.invoke("typed", args));
    expect(error.code).toBe("E_INVALID_INPUT");
    expect(error.exitCode).toBe(3);
    expect(error.message).toBe(message);
    expect(error.details?.problems).toEqual(problems.map((p) => expect.objectContaining(p)));
  });

  test("numbers and booleans sent as strings (or 0/1) are taken as the type the schema asks for; nothing else is", async () => {
    await using session = await openSession();
    const plugin = await session.load(TYPED);
    const result = await plugin.invoke("typed", { n: "7", ratio: "-2.5e1", flag: 1, items: [{ name: "x" }] });
    expect(result.output.arguments).toEqual({ n: 7, ratio: -25, flag: true, items: [{ name: "x" }] });
    expect((await plugin.invoke("typed", { n: 0, flag: "false" })).output.arguments).toEqual({ n: 0, flag: false });
    // "7.5" is a number but not an integer; " 7" is not how JSON writes a number; 2 is not a boolean
    for (const args of [{ n: "7.5" }, { n: "0x10" }, { n: 1, flag: 2 }, { n: 1, flag: "yes" }]) {
      expect((await refusal(plugin.invoke("typed", args))).code).toBe("E_INVALID_INPUT");
    }
  });

  test("draft-07 schemas are checked too, and a gated tool is checked before anyone is asked", async () => {
    await using session = await openSession();
    const plugin = await session.load(TYPED);
    let asked = 0;
    const permission = () => {
      asked++;
      return "once" as const;
    };
    const error = await refusal(plugin.invoke("draft7", { when: "soon" }, { permission }));
    expect(error.message).toBe('arguments for draft7 do not match its inputSchema: when: does not match any of ["now","later"] (enum)');
    expect(asked).toBe(0);
    expect((await refusal(plugin.gate("draft7", {}))).code).toBe("E_INVALID_INPUT");
    expect((await plugin.invoke("draft7", { when: "now" }, { permission })).success).toBe(true);
    expect(asked).toBe(1);
  });

  test("the CLI: exit 3 with the path and the rule; the plugin's own failure is not named twice", async () => {
    const r = await cli(["invoke", TYPED, "typed", "--args", '{"n": -1}', "--json"]);
    expect(r.code).toBe(3);
    expect(r.json().error).toMatchObject({ code: "E_INVALID_INPUT", message: "arguments for typed do not match its inputSchema: n: -1 is less than 0 (minimum)" });
    const failed = await cli(["invoke", TYPED, "names_itself", "--json"]);
    expect(failed.code).toBe(5);
    expect(failed.json().error.message).toBe("plugin 'typed-arguments': names_itself: the backend is down");
  });
});

describe("arguments nested deeper than the plugin host reads", () => {
  const nested = (depth: number) => {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = { x: value };
    return value as Record<string, unknown>;
  };

  test(`more than ${ARGUMENTS_DEPTH_LIMIT} levels fail at once with E_INVALID_INPUT, never reaching the plugin`, async () => {
    await using session = await openSession();
    const plugin = await session.load(fixture("echo"));
    const error = await within(refusal(plugin.invoke("echo_this", nested(600))), 10_000, "the deep call");
    expect(error.code).toBe("E_INVALID_INPUT");
    expect(error.message).toStartWith(`arguments for echo_this are nested more than ${ARGUMENTS_DEPTH_LIMIT} levels deep (at x.x.x`);
    expect((await plugin.invoke("echo_this", nested(ARGUMENTS_DEPTH_LIMIT - 1))).success).toBe(true);
  });

  test("a request the plugin host cannot parse but whose id it can read is answered with a fault, not ignored", async () => {
    const proc = Bun.spawn([...hostCommand(), fixtureLibrary("echo")], {
      cwd: ROOT,
      env: { ...process.env, CXAGENT_PARENT_PID: String(process.pid) },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "ignore",
    });
    try {
      const lines: Record<string, unknown>[] = [];
      const reading = (async () => {
        let rest = "";
        for await (const chunk of proc.stdout) {
          rest += new TextDecoder().decode(chunk);
          let nl: number;
          while ((nl = rest.indexOf("\n")) >= 0) {
            lines.push(JSON.parse(rest.slice(0, nl)));
            rest = rest.slice(nl + 1);
          }
        }
      })();
      const deep = `{"id":7,"kind":"invoke","tool":"echo_this","arguments":${"[".repeat(600)}${"]".repeat(600)}}\n`;
      proc.stdin.write(`${JSON.stringify({ id: 1, kind: "start", context: { workingDirectory: ROOT, settings: {}, hostContract: 4 } })}\n${deep}{"kind":"invoke"\n`);
      proc.stdin.flush();
      await within(
        (async () => {
          while (!lines.some((l) => l.id === 7)) await Bun.sleep(10);
        })(),
        10_000,
        "the answer to the deep request",
      );
      expect(lines.find((l) => l.id === 7)).toEqual({ id: 7, ok: false, fault: "bad-request", error: "the plugin host could not read this request: nesting deeper than 512 levels" });
      proc.stdin.end();
      await reading;
    } finally {
      if (alive(proc.pid)) proc.kill("SIGKILL");
    }
  });
});

describe("a sidecar whose inputSchema is not a JSON Schema", () => {
  test("is E_MANIFEST naming the path and the rule, before any code runs", async () => {
    using dir = tempDir();
    const folder = copyFixture("typed-arguments", dir.path);
    const sidecar = join(folder, "typed-arguments.plugin.json");
    const manifest = JSON.parse(readFileSync(sidecar, "utf8"));
    manifest.tools[0].inputSchema.properties.n.type = "integr";
    manifest.tools[1].inputSchema.required = "when";
    manifest.tools[2].inputSchema = { $schema: "http://json-schema.org/draft-04/schema#" };
    writeFileSync(sidecar, JSON.stringify(manifest));
    const r = await cli(["describe", folder, "--json"]);
    expect(r.code).toBe(3);
    expect(r.json().error.code).toBe("E_MANIFEST");
    expect(r.json().error.details.problems.map((p: { path: string }) => p.path)).toEqual([
      "tools[0].inputSchema.properties.n.type",
      "tools[1].inputSchema.required",
      "tools[2].inputSchema.$schema",
    ]);
    expect(r.json().error.message).toContain(
      `tools[0].inputSchema.properties.n.type: does not match any of ["array","boolean","integer","null","number","object","string"] (enum) — not a valid JSON Schema (tool 'typed')`,
    );
  });
});

describe("checked once", () => {
  test("a gated call's arguments are checked once, at the door: the gate receives them checked", async () => {
    const { ArgumentsValidator } = await import("../../src/json-schema/check.ts");
    await using session = await openSession();
    const gates = await session.load(fixture("gates"));
    const check = ArgumentsValidator.prototype.check;
    let checks = 0;
    ArgumentsValidator.prototype.check = function (this: InstanceType<typeof ArgumentsValidator>, ...args: Parameters<typeof check>) {
      checks++;
      return check.apply(this, args);
    };
    try {
      expect((await gates.invoke("asks", { x: 1 }, { permission: "once" })).success).toBe(true);
      expect((await gates.invoke("manifest_true", { x: 1 }, { permission: "once" })).success).toBe(true);
    } finally {
      ArgumentsValidator.prototype.check = check;
    }
    expect(checks).toBe(2);
  });
});
