/**
 * The pure parts of `cxagent mcp`: how tools and results map to MCP, progress values, log
 * levels, --allow-tool rules, elicitation answers, --http addresses and the HTTP request guard.
 */
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { CxError, type JobResult, type Manifest } from "../../src/index.ts";
import { isLoopback, loopbackHosts, parseListen, refusal } from "../../src/mcp/http.ts";
import { answerOf, elicitation, parseAllowRule, permissionFor } from "../../src/mcp/permission.ts";
import { clientLabel } from "../../src/mcp/hub.ts";
import { StdioTransport } from "../../src/mcp/stdio.ts";
import { callResult, failedCall, isAtLeast, listedTool, mcpLevel, ProgressCounter, visible } from "../../src/mcp/tools.ts";

const manifest = (tools: Manifest["tools"]): Manifest =>
  ({ pluginContract: 4, name: "calc", version: "2.0.0", instructions: null, spawns: false, client: false, tools, commands: [] }) as Manifest;
const tool = (over: Partial<Manifest["tools"][number]> = {}) => ({ name: "add", description: "Adds", inputSchema: { type: "object" }, gated: false as const, alwaysAskable: true, ...over });
const job = (over: Partial<JobResult> = {}): JobResult => ({
  success: true,
  exitCode: 0,
  errorMessage: null,
  permissionDenied: false,
  decidedBy: null,
  output: {},
  logFile: null,
  durationMs: 3,
  ...over,
});

describe("tools/list entries", () => {
  test("the inputSchema object is the manifest's own; an empty description gets a fallback", () => {
    const schema = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", $defs: { a: {} }, additionalProperties: false };
    const listed = listedTool(manifest([]), tool({ inputSchema: schema, description: "  " }));
    expect(listed.inputSchema).toBe(schema);
    expect(listed.description).toBe("add (from plugin calc 2.0.0)");
    expect(listed._meta).toEqual({ "cxagent/plugin": "calc", "cxagent/gated": false });
    expect(listed).not.toHaveProperty("annotations");
  });
});

describe("tools/call results", () => {
  test("text is output.content; isError is !success; structuredContent (= output) only for a tool with an outputSchema", () => {
    const plain = callResult("calc", "add", job({ output: { content: "5", answer: 5 } }));
    expect(plain).toMatchObject({ content: [{ type: "text", text: "5" }], isError: false });
    expect(plain).not.toHaveProperty("structuredContent");
    expect(callResult("calc", "add", job({ output: { content: "5", answer: 5 } }), undefined, true)).toMatchObject({
      content: [{ type: "text", text: "5" }],
      structuredContent: { content: "5", answer: 5 },
      isError: false,
    });
  });

  test("a failure without text says so with its message, or its exit code", () => {
    expect(callResult("calc", "add", job({ success: false, errorMessage: "boom", output: { content: "" } })).content[0]!.text).toBe("boom");
    expect(callResult("calc", "add", job({ success: false, exitCode: 7 })).content[0]!.text).toBe("add failed (exit code 7) and gave no message");
  });

  test("non-string content is shown as JSON; an output without content too", () => {
    expect(callResult("calc", "add", job({ output: { content: [1, 2] } })).content[0]!.text).toBe("[1,2]");
    expect(callResult("calc", "add", job({ output: { answer: 5 } })).content[0]!.text).toBe('{"answer":5}');
    expect(callResult("calc", "add", job()).content[0]!.text).toBe("");
  });

  test("a denial by policy carries the hint; a call that produced no result carries the error's code", () => {
    const denied = callResult("calc", "add", job({ success: false, permissionDenied: true, decidedBy: "policy", output: { content: "not run" } }), "how to allow");
    expect(denied.content[0]!.text).toBe("not run\nhow to allow");
    expect(denied._meta).toMatchObject({ "cxagent/decidedBy": "policy", "cxagent/permissionDenied": true });
    const failed = failedCall("calc", new CxError("E_CRASHED", "it crashed", { hint: "the next call restarts it" }));
    expect(failed).toEqual({ content: [{ type: "text", text: "it crashed\nthe next call restarts it" }], isError: true, _meta: { "cxagent/plugin": "calc", "cxagent/error": "E_CRASHED" } });
  });
});

describe("progress values", () => {
  test("strictly increasing: repeats, -1 and stream reports are nudged, never past 100", () => {
    const c = new ProgressCounter();
    const values = [c.next(0), c.next(-1), c.next(null), c.next(0), c.next(50), c.next(40), c.next(100), c.next(null), c.next(100)];
    expect(values).toEqual([0, 0.1, expect.closeTo(0.1999, 6), expect.closeTo(0.2997, 4), 50, 50.05, 100, null, null]);
    expect(new ProgressCounter().next(-1)).toBe(0.1); // "busy" first: just above nothing
    const sent = values.filter((v): v is number => v !== null);
    for (let i = 1; i < sent.length; i++) expect(sent[i]!).toBeGreaterThan(sent[i - 1]!);
  });
});

describe("log levels", () => {
  test("0 trace and 1 debug → debug, 2 info, 3 warning, 4 error, 5 critical", () => {
    expect([0, 1, 2, 3, 4, 5].map(mcpLevel)).toEqual(["debug", "debug", "info", "warning", "error", "critical"]);
    expect(isAtLeast("warning", "info")).toBe(true);
    expect(isAtLeast("info", "warning")).toBe(false);
  });
});

describe("--allow-tool rules", () => {
  test("plugin/tool, the stored rule's text, and * wildcards", () => {
    expect(parseAllowRule("calc/add").matches("calc", "add")).toBe(true);
    expect(parseAllowRule("calc/add").matches("calc", "add2")).toBe(false);
    expect(parseAllowRule("plugin calc tool add").matches("calc", "add")).toBe(true);
    expect(parseAllowRule("calc/*").matches("calc", "anything")).toBe(true);
    expect(parseAllowRule("calc/*").matches("other", "anything")).toBe(false);
    expect(parseAllowRule("*/add").matches("other", "add")).toBe(true);
    // A dot is literal, not "any character".
    expect(parseAllowRule("a.b/add").matches("axb", "add")).toBe(false);
  });

  test("the stored rule's text with any spacing, and either form with spaces around it", () => {
    expect(parseAllowRule("plugin  calc   tool\tadd").matches("calc", "add")).toBe(true);
    expect(parseAllowRule("plugin calc tool \t add").matches("calc", "add")).toBe(true);
    expect(parseAllowRule("  calc/add \n").text).toBe("calc/add");
    expect(parseAllowRule(" plugin calc tool add ").text).toBe("plugin calc tool add");
  });

  test.each(["", "calc", "calc/", "/add", "a/b/c", "plugin calc tool", "calc/add tool", "ca(lc/add", "xplugin calc tool add", "plugin calc tool add more", "plugin calc tool add/x"])("'%s' is a usage error", (text) => {
    expect(() => parseAllowRule(text)).toThrow(
      expect.objectContaining({ code: "E_USAGE", message: `--allow-tool '${text}' is not a rule`, hint: "write <plugin>/<tool> (e.g. calculator/calc_add, calculator/*) or 'plugin <plugin> tool <tool>'" }),
    );
  });
});

describe("elicitation", () => {
  const request = (alwaysOffered: boolean, display = "divide 1 by zero") => ({
    plugin: "calc",
    tool: "div",
    arguments: {},
    decision: { ask: true, display, alwaysOffered, rule: "plugin calc tool div", source: "gate" as const, granted: false, forcedBy: null },
  });

  test("the question names plugin and tool; Allow always only when offered; control characters are escaped", () => {
    const offered = elicitation(request(true), "/p");
    expect(offered.message).toBe("cxagent: plugin 'calc' wants to run its tool 'div'.\ndivide 1 by zero");
    expect(offered.requestedSchema.properties.decision.enum).toEqual(["allow_once", "allow_always", "deny"]);
    expect(offered.requestedSchema.properties.decision.enumNames[1]).toBe("Allow always (stores 'plugin calc tool div' for /p)");
    const narrowed = elicitation(request(false, "evil\x1b[2J\u009b text"), "/p");
    expect(narrowed.requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    expect(narrowed.message).toBe("cxagent: plugin 'calc' wants to run its tool 'div'.\nevil\\u001b[2J\\u009b text\nAllow always is not offered for this call.");
  });

  test("the form's labels, its question, and the wording when the decision has none of its own", () => {
    const offered = elicitation(request(true), "/p").requestedSchema.properties.decision;
    expect(offered.enumNames).toEqual(["Allow once", "Allow always (stores 'plugin calc tool div' for /p)", "Deny"]);
    expect(offered.description).toBe("Run div of plugin calc?");
    expect(offered.title).toBe("Decision");
    expect(elicitation(request(false), "/p").requestedSchema.properties.decision.enumNames).toEqual(["Allow once", "Deny"]);
    const bare = { ...request(false), decision: { ...request(false).decision, display: null } };
    expect(elicitation(bare as never, "/p").message).toBe("cxagent: plugin 'calc' wants to run its tool 'div'.\ncalc wants to run div\nAllow always is not offered for this call.");
  });

  test("permissionFor: a rule allows once, noting it; the client's answer is noted; a failed question denies, unless the call was cancelled", async () => {
    const notes: string[] = [];
    const base = { plugin: "calc", tool: "div", project: "/p", note: (line: string) => notes.push(line), mayStore: true };
    const byRule = permissionFor({ ...base, rules: [parseAllowRule("calc/*")], canElicit: true, elicit: async () => ({ action: "decline" }), signal: new AbortController().signal })!;
    expect(await byRule(request(true) as never)).toBe("once");
    expect(notes.pop()).toBe("allowed by --allow-tool calc/*: divide 1 by zero");
    expect(permissionFor({ ...base, rules: [], canElicit: false, elicit: async () => ({ action: "decline" }), signal: new AbortController().signal })).toBeUndefined();
    const asked = permissionFor({ ...base, rules: [parseAllowRule("other/*")], canElicit: true, elicit: async () => ({ action: "accept", content: { decision: "allow_once" } }), signal: new AbortController().signal })!;
    expect(await asked(request(true) as never)).toBe("once");
    expect(notes.pop()).toBe("calc div: the client answered accept allow_once → once");
    const declined = permissionFor({ ...base, rules: [], canElicit: true, elicit: async () => ({ action: "decline" }), signal: new AbortController().signal })!;
    expect(await declined(request(true) as never)).toBe("deny");
    expect(notes.pop()).toBe("calc div: the client answered decline → deny");
    const failing = permissionFor({ ...base, rules: [], canElicit: true, elicit: async () => Promise.reject(new Error("no form")), signal: new AbortController().signal })!;
    expect(await failing(request(true) as never)).toBe("deny");
    expect(notes.pop()).toBe("calc div: asking the client failed (no form), so the call is denied");
    const controller = new AbortController();
    controller.abort();
    const cancelled = permissionFor({ ...base, rules: [], canElicit: true, elicit: async () => Promise.reject(new Error("cancelled")), signal: controller.signal })!;
    expect(await Promise.resolve(cancelled(request(true) as never)).then(() => "answered", (e: Error) => e.message)).toBe("cancelled");
    expect(notes).toEqual([]);
  });

  test("a rule that makes a tool ask on every call is named in the question, made visible", () => {
    const forced = { ...request(false), decision: { ...request(false).decision, forcedBy: { source: "/p/.cxagent/config.json", rule: "plugins.calc.tools.ask[0]", pattern: "d\x1biv", kind: "ask" } } };
    expect(elicitation(forced as never, "/p").message).toBe(
      'cxagent: plugin \'calc\' wants to run its tool \'div\'.\ndivide 1 by zero\nThis tool asks on every call because of /p/.cxagent/config.json: plugins.calc.tools.ask[0] ("d\\u001biv").\nAllow always is not offered for this call.',
    );
  });

  test("permissionFor: a client that may not store a grant is never offered Allow always, and its allow_always is a denial", async () => {
    for (const mayStore of [false, true]) {
      const asked: ReturnType<typeof elicitation>[] = [];
      const handler = permissionFor({
        plugin: "calc",
        tool: "div",
        project: "/p",
        note: () => {},
        mayStore,
        rules: [],
        canElicit: true,
        elicit: async (params) => (asked.push(params), { action: "accept", content: { decision: "allow_always" } }),
        signal: new AbortController().signal,
      })!;
      expect(await handler(request(true) as never)).toBe(mayStore ? "always" : "deny");
      expect(asked[0]!.requestedSchema.properties.decision.enum).toEqual(mayStore ? ["allow_once", "allow_always", "deny"] : ["allow_once", "deny"]);
      // a decision that offers no Always is asked as it is, either way
      asked.length = 0;
      expect(await handler(request(false) as never)).toBe("deny");
      expect(asked[0]!.requestedSchema.properties.decision.enum).toEqual(["allow_once", "deny"]);
    }
  });

  test("only an accepted allow allows; allow_always counts only when offered", () => {
    expect(answerOf({ action: "accept", content: { decision: "allow_once" } }, false)).toBe("once");
    expect(answerOf({ action: "accept", content: { decision: "allow_always" } }, true)).toBe("always");
    expect(answerOf({ action: "accept", content: { decision: "allow_always" } }, false)).toBe("deny");
    expect(answerOf({ action: "accept", content: { username: "x" } }, true)).toBe("deny");
    expect(answerOf({ action: "accept" }, true)).toBe("deny");
    expect(answerOf({ action: "decline" }, true)).toBe("deny");
    expect(answerOf({ action: "cancel", content: { decision: "allow_once" } }, true)).toBe("deny");
  });
});

describe("--http addresses", () => {
  test("HOST:PORT, [IPv6]:PORT and PORT alone; localhost binds 127.0.0.1", () => {
    expect(parseListen("127.0.0.1:8765", false)).toEqual({ host: "127.0.0.1", port: 8765, loopback: true });
    expect(parseListen("localhost:0", false)).toEqual({ host: "127.0.0.1", port: 0, loopback: true });
    expect(parseListen("[::1]:9000", false)).toEqual({ host: "::1", port: 9000, loopback: true });
    expect(parseListen("8765", false)).toEqual({ host: "127.0.0.1", port: 8765, loopback: true });
    expect(parseListen("127.3.4.5:1", false).loopback).toBe(true);
  });

  test("a non-loopback address is refused unless --allow-remote; bad text is a usage error", () => {
    for (const address of ["0.0.0.0:8765", "192.168.1.5:80", "[::]:80", "example.com:80", "127.0.0.1.nip.io:80"]) {
      expect(() => parseListen(address, false)).toThrow(expect.objectContaining({ code: "E_USAGE", message: expect.stringContaining("not a loopback address") }));
    }
    expect(parseListen("0.0.0.0:8765", true)).toEqual({ host: "0.0.0.0", port: 8765, loopback: false });
    for (const bad of ["", "host:", ":80", "127.0.0.1:99999", "127.0.0.1:80:80"]) expect(() => parseListen(bad, false)).toThrow(expect.objectContaining({ code: "E_USAGE" }));
    expect(isLoopback("localhost")).toBe(true);
    expect(isLoopback("128.0.0.1")).toBe(false);
  });
});

describe("the HTTP request guard", () => {
  const hosts = loopbackHosts("127.0.0.1", 8765);
  const headers = (h: Record<string, string>) => new Headers(h);

  test("the loopback names on our port pass; any other Host is 403", () => {
    for (const host of ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST:8765"]) expect(refusal(headers({ host }), { hosts, token: null })).toBeNull();
    for (const host of ["evil.example.com", "127.0.0.1:8766", "127.0.0.1", "localhost.evil.com:8765"]) {
      expect(refusal(headers({ host }), { hosts, token: null })?.status).toBe(403);
    }
    expect(refusal(headers({}), { hosts, token: null })?.status).toBe(403);
  });

  test("an Origin must name this server too", () => {
    const ok = { host: "127.0.0.1:8765" };
    expect(refusal(headers({ ...ok, origin: "http://localhost:8765" }), { hosts, token: null })).toBeNull();
    for (const origin of ["http://evil.example.com", "null", "file://", "http://127.0.0.1:9999", "chrome-extension://abc"]) {
      expect(refusal(headers({ ...ok, origin }), { hosts, token: null })?.status).toBe(403);
    }
  });

  test("a token is compared exactly; remote mode checks no Host but still a foreign Origin", () => {
    const policy = { hosts, token: "s3cret" };
    expect(refusal(headers({ host: "127.0.0.1:8765", authorization: "Bearer s3cret" }), policy)).toBeNull();
    for (const authorization of ["", "Bearer s3cre", "Bearer s3cret2", "bearer s3cret", "s3cret"]) {
      expect(refusal(headers({ host: "127.0.0.1:8765", authorization }), policy)?.status).toBe(401);
    }
    const remote = { hosts: null, token: "t" };
    expect(refusal(headers({ host: "my.host:80", authorization: "Bearer t" }), remote)).toBeNull();
    expect(refusal(headers({ host: "my.host:80", origin: "http://evil.example.com", authorization: "Bearer t" }), remote)?.status).toBe(403);
  });
});

test("visible() escapes control characters but keeps newlines and tabs", () => {
  expect(visible("a\nb\tc\x07\x7f")).toBe("a\nb\tc\\u0007\\u007f");
});

describe("the stdio transport", () => {
  const open = async (cap = 64) => {
    const input = new PassThrough();
    const frames: any[] = [];
    const received: any[] = [];
    const events: string[] = [];
    const transport = new StdioTransport(input, (f) => frames.push(JSON.parse(f)), cap);
    transport.onmessage = (m) => received.push(m);
    transport.onend = (why) => events.push(`end: ${why}`);
    transport.onclose = () => events.push("close");
    await transport.start();
    return { input, frames, received, events, transport };
  };

  test("lines split anywhere, even inside a UTF-8 character, arrive whole", async () => {
    const t = await open(1000);
    const bytes = Buffer.from('{"jsonrpc":"2.0","method":"ping","id":"é"}\n');
    for (const b of bytes) t.input.write(Buffer.from([b]));
    await t.transport.delivered();
    expect(t.received).toEqual([{ jsonrpc: "2.0", method: "ping", id: "é" }]);
  });

  test("a line over the cap is refused with an error frame and costs that line only", async () => {
    const t = await open(64);
    t.input.write(`{"jsonrpc":"2.0","method":"ping","id":1,"pad":"${"x".repeat(100)}`);
    t.input.write(`${"y".repeat(100)}"}\n{"jsonrpc":"2.0","method":"ping","id":2}\n`);
    await t.transport.delivered();
    expect(t.frames).toEqual([{ jsonrpc: "2.0", id: null, error: { code: -32600, message: "a message over 64 characters was dropped" } }]);
    expect(t.received).toEqual([{ jsonrpc: "2.0", method: "ping", id: 2 }]);
  });

  test("stdin's end is reported, but the connection stays open until closed", async () => {
    const t = await open();
    t.input.end();
    await new Promise((r) => setImmediate(r));
    expect(t.events).toEqual(["end: stdin closed"]);
    await t.transport.send({ jsonrpc: "2.0", id: 1, result: {} });
    expect(t.frames).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }]);
    await t.transport.close();
    await t.transport.send({ jsonrpc: "2.0", id: 2, result: {} });
    expect(t.events).toEqual(["end: stdin closed", "close"]);
    expect(t.frames).toHaveLength(1);
  });
});

test("a client's name reaches the --verbose log only as plain text", () => {
  expect(clientLabel("claude-code")).toBe("claude-code");
  expect(clientLabel("qwen-cli-mcp-client-cxagent")).toBe("qwen-cli-mcp-client-cxagent");
  expect(clientLabel("evil\u001b]0;pwned\u0007")).toBe("a client");
  expect(clientLabel("line\nbreak")).toBe("a client");
  expect(clientLabel("right-to-left \u202e")).toBe("a client");
  expect(clientLabel("x".repeat(64))).toBe("x".repeat(64));
  expect(clientLabel("x".repeat(65))).toBe("a client");
  expect(clientLabel("")).toBe("a client");
  expect(clientLabel(undefined)).toBe("a client");
  expect(clientLabel({ name: "x" })).toBe("a client");
});
