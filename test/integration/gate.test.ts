/**
 * Per-call permission (SPEC §7) through the library: every row of the table with a real gate.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { GateDecision, PermissionRequest, SessionOptions } from "../../src/index.ts";
import { addGrant, projectScope, readGrants } from "../../src/trust/grants.ts";
import { CALCULATOR, copyFixture, fixture, freeCounts, openSession, refusal, tempDir, until, within } from "../helpers.ts";

const RULE = (tool: string) => `plugin gates tool ${tool}`;

describe("the decision", () => {
  const rows: [string, Partial<GateDecision>, string][] = [
    ["manifest_false", { ask: false, display: null, alwaysOffered: false, rule: null, source: "manifest" }, ""],
    ["manifest_true", { ask: true, alwaysOffered: true, rule: RULE("manifest_true"), source: "manifest" }, 'gates wants to run manifest_true with {"x":1}'],
    ["manifest_true_narrow", { ask: true, alwaysOffered: false, source: "manifest" }, ""],
    ["null_gate", { ask: false, display: null, alwaysOffered: false, rule: null, source: "gate" }, ""],
    ["asks", { ask: true, display: "asks about these arguments", alwaysOffered: true, rule: RULE("asks"), source: "gate" }, ""],
    ["asks_narrow", { ask: true, display: "a sharp edge", alwaysOffered: false, source: "gate" }, ""],
    ["widen", { ask: true, display: "trying to widen", alwaysOffered: false, source: "gate" }, ""],
    ["json_null", { ask: true, alwaysOffered: false, rule: RULE("json_null"), source: "gate-failed" }, "it returned JSON null"],
    ["garbage", { ask: true, alwaysOffered: false, source: "gate-failed" }, "returned invalid JSON"],
    ["non_object", { ask: true, alwaysOffered: false, source: "gate-failed" }, "it returned an array, not an object"],
    ["no_display", { ask: true, alwaysOffered: false, source: "gate-failed" }, "its answer has no string display"],
    ["bad_always", { ask: true, alwaysOffered: false, source: "gate-failed" }, "its alwaysAskable is not a boolean"],
  ];
  test.each(rows)("%s", async (tool, expected, display) => {
    await using session = await openSession();
    const gates = await session.load(fixture("gates"));
    const decision = await gates.gate(tool, { x: 1 });
    expect(decision).toMatchObject({ ...expected, granted: false });
    if (display) expect(decision.display).toContain(display);
    if (decision.source === "gate-failed") expect(decision.display).toContain("gates wants to run " + tool);
  });

  test("a gate past its deadline asks with no Always; its late answer is freed and dropped", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    await using session = await openSession({ gateMs: 200, env: { CXAGENT_FX_FREE_LOG: log } });
    const gates = await session.load(fixture("gates"));
    const decision = await gates.gate("sleeps", { ms: 600 });
    expect(decision).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
    expect(decision.display).toContain("it took longer than 200 ms");
    // describe + start + the late gate answer: each returned string freed exactly once
    // (a free is logged just after its return: wait for both, or this reads between the two)
    await until(() => freeCounts(log).returned === 3 && freeCounts(log).freed === 3, 5000, "the late gate answer, freed");
    expect(freeCounts(log)).toEqual({ returned: 3, freed: 3 });
  });

  test("the default deadline: a gate that takes too long counts as failed after 500 ms", async () => {
    await using session = await openSession(); // no gateMs: the default applies
    const gates = await session.load(fixture("gates"));
    const decision = await within(gates.gate("sleeps", { ms: 20_000 }), 10_000, "the gate decision");
    expect(decision).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
    expect(decision.display).toContain("it took longer than 500 ms");
  }, 20_000);

  test("a gate that segfaults: ask with no Always; the next call starts a fresh plugin host and works", async () => {
    await using session = await openSession();
    const gates = await session.load(fixture("gates"));
    const first = gates.pid;
    const decision = await gates.gate("segfault");
    expect(decision).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed" });
    expect(decision.display).toContain("the plugin crashed");
    expect(decision.display).toContain("SIGSEGV");
    expect((await gates.invoke("manifest_false", { after: "crash" })).output.arguments).toEqual({ after: "crash" });
    expect(gates.pid).not.toBe(first);
  });

  test("the calculator's calc_divide asks only for a zero divisor", async () => {
    await using session = await openSession();
    const calc = await session.load(CALCULATOR);
    expect((await calc.gate("calc_divide", { a: 1, b: 2 })).ask).toBe(false);
    expect(await calc.gate("calc_divide", { a: 7, b: 0 })).toMatchObject({ ask: true, display: "calc_divide: divide 7 by zero", source: "gate" });
  });
});

describe("concurrency", () => {
  test("a gate stuck for 10 s delays nothing but its own decision: 20 invokes finish meanwhile", async () => {
    await using session = await openSession({ gateMs: 30_000 });
    const gates = await session.load(fixture("gates"));
    let gateSettled = false;
    const stuck = gates.gate("sleeps", { ms: 10_000 }).finally(() => (gateSettled = true));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => gates.invoke("manifest_false", { i })));
    expect(results.map((r) => r.output.arguments)).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
    expect(gateSettled).toBe(false);
    await session.close();
    await stuck.catch(() => {});
  });

  test("gates for many calls are asked at once", async () => {
    await using session = await openSession({ gateMs: 20_000 });
    const gates = await session.load(fixture("gates"));
    const decisions = await Promise.all(Array.from({ length: 6 }, () => gates.gate("together", { n: 6 })));
    expect(decisions.map((d) => d.display)).toEqual(Array(6).fill("all arrived"));
  });
});

describe("approval of a gated call", () => {
  test("without an approver the call is denied by policy and never reaches invoke", async () => {
    await using session = await openSession();
    const gates = await session.load(fixture("gates"));
    const result = await gates.invoke("manifest_true", { x: 1 });
    expect(result).toMatchObject({ success: false, permissionDenied: true, decidedBy: "policy" });
    expect(result.output.arguments).toBeUndefined(); // the echo never happened
  });

  test("a call cancelled while its permission is being asked never starts, whatever the answer", async () => {
    using dir = tempDir();
    const log = join(dir.path, "frees");
    await using session = await openSession({ env: { CXAGENT_FX_FREE_LOG: log } });
    const gates = await session.load(fixture("gates"));
    await until(() => freeCounts(log).freed === 2, 5000, "describe and start, freed"); // what the load returned
    const controller = new AbortController();
    const call = gates.invoke("manifest_true", { x: 1 }, {
      signal: controller.signal,
      permission: () => {
        controller.abort(); // the caller gives up while the question is on screen; then it is answered
        return "once";
      },
    });
    const error = await call.then(() => null, (e: unknown) => e as Error & { code?: string });
    expect(error?.code).toBe("E_CANCELLED");
    expect(error?.message).toBe("plugin 'gates': manifest_true was cancelled before it started");
    // the plugin returned nothing more: no invoke reached it (the next call's result is the third string)
    expect((await gates.invoke("manifest_false", { y: 2 })).output.arguments).toEqual({ y: 2 });
    await until(() => freeCounts(log).freed === 3, 5000, "the next call's result, freed");
    expect(freeCounts(log)).toEqual({ returned: 3, freed: 3 });
  });

  test("once, deny, and always — which stores a grant that later calls honour without asking", async () => {
    using dir = tempDir();
    const project = join(dir.path, "project");
    mkdirSync(project);
    const state = join(dir.path, "state");
    await using session = await openSession({ cwd: project, stateDir: state });
    const gates = await session.load(fixture("gates"));
    const asked: PermissionRequest[] = [];
    const answer = (a: "once" | "always" | "deny") => (request: PermissionRequest) => {
      asked.push(request);
      return a;
    };
    expect((await gates.invoke("asks", { n: 1 }, { permission: answer("once") })).output.arguments).toEqual({ n: 1 });
    expect(await gates.invoke("asks", { n: 2 }, { permission: answer("deny") })).toMatchObject({ permissionDenied: true, decidedBy: "user" });
    expect(readGrants(state)).toEqual([]);
    expect((await gates.invoke("asks", { n: 3 }, { permission: answer("always") })).success).toBe(true);
    // scoped to the project's real path, and bound to the folder of the plugin it was given to
    expect(readGrants(state)).toEqual([{ scope: project, rule: RULE("asks"), folder: fixture("gates"), grantedAt: expect.any(String) }]);
    expect(asked.map((r) => [r.tool, r.decision.display])).toEqual(Array(3).fill(["asks", "asks about these arguments"]));
    // the grant answers from now on: no approver needed
    expect((await gates.invoke("asks", { n: 4 })).output.arguments).toEqual({ n: 4 });
    expect((await gates.gate("asks")).granted).toBe(true);
  });

  test("an async handler may answer with a plain string; one that is not once, always or deny fails the call, which never reaches invoke", async () => {
    using dir = tempDir();
    await using session = await openSession({ stateDir: join(dir.path, "state") });
    const gates = await session.load(fixture("gates"));
    // `async () => "once"` type-checks as a PermissionHandler (its answer widens to string)
    expect((await gates.invoke("asks", { n: 1 }, { permission: async () => "once" })).output.arguments).toEqual({ n: 1 });
    for (const bad of ["yes", "Always", undefined]) {
      const error = await refusal(gates.invoke("asks", { n: 2 }, { permission: async () => bad as string }));
      expect(error).toMatchObject({ code: "E_INVALID_INPUT", message: `the permission answer for asks was ${JSON.stringify(bad) ?? "undefined"}, not "once", "always" or "deny"; the call was not made` });
    }
    expect(readGrants(join(dir.path, "state"))).toEqual([]);
  });

  test("Always is not stored where it is not offered", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    await using session = await openSession({ stateDir: state });
    const gates = await session.load(fixture("gates"));
    expect((await gates.invoke("widen", {}, { permission: "always" })).success).toBe(true);
    expect((await gates.invoke("json_null", {}, { permission: "always" })).success).toBe(true);
    expect(readGrants(state)).toEqual([]);
  });

  test("a grant is scoped to its project folder, to its plugin's name and to that plugin's folder", async () => {
    using dir = tempDir();
    const state = join(dir.path, "state");
    const [one, two] = ["one", "two"].map((p) => join(dir.path, p));
    for (const p of [one!, two!]) mkdirSync(p);
    const elsewhere = copyFixture("gates", join(dir.path, "elsewhere"));
    {
      await using session = await openSession({ cwd: one, stateDir: state });
      const gates = await session.load(fixture("gates"));
      await gates.invoke("manifest_true", {}, { permission: "always" });
      expect((await gates.invoke("manifest_true")).success).toBe(true);
    }
    {
      await using session = await openSession({ cwd: two, stateDir: state });
      const gates = await session.load(fixture("gates"));
      expect((await gates.invoke("manifest_true")).permissionDenied).toBe(true);
    }
    {
      // another plugin declaring the same tool name starts from no permission
      await using session = await openSession({ cwd: one, stateDir: state });
      const twin = await session.load(fixture("gated-twin"));
      expect(await twin.invoke("manifest_true")).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
    }
    {
      // nor does a plugin of the same name in another folder: it is a different plugin
      await using session = await openSession({ cwd: one, stateDir: state });
      const namesake = await session.load(elsewhere);
      expect(namesake.name).toBe("gates");
      expect(await namesake.gate("manifest_true")).toMatchObject({ ask: true, alwaysOffered: true, granted: false });
      expect(await namesake.invoke("manifest_true")).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
    }
  });
});

describe("a stored grant answers only a call that offers Always", () => {
  /**
   * A session in a project of its own whose permissions.json already holds a grant for each of
   * `tools` — left, say, by an earlier version of the plugin — and one for "asks", which must answer.
   */
  async function withGrants(dir: string, tools: string[], options: SessionOptions = {}) {
    const project = join(dir, "project");
    mkdirSync(project);
    const state = join(dir, "state");
    for (const tool of [...tools, "asks"]) addGrant(state, projectScope(project), RULE(tool), realpathSync(fixture("gates")));
    const session = await openSession({ cwd: project, stateDir: state, ...options });
    const gates = await session.load(fixture("gates"));
    expect((await gates.gate("asks")).granted).toBe(true); // the grants are where the session looks
    return { session, gates, state, project };
  }

  test.each(["json_null", "garbage", "non_object", "no_display", "bad_always", "segfault"])("a gate that fails (%s) asks, whatever grant exists", async (tool) => {
    using dir = tempDir();
    const { session, gates } = await withGrants(dir.path, [tool]);
    await using _ = session;
    expect(await gates.gate(tool)).toMatchObject({ ask: true, alwaysOffered: false, source: "gate-failed", granted: false });
    expect(await gates.invoke(tool)).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
  });

  test("a gate that answered when Always was granted, and now misses its deadline, asks", async () => {
    using dir = tempDir();
    const { session, gates, state, project } = await withGrants(dir.path, [], { gateMs: 2000 });
    await using _ = session;
    expect((await gates.invoke("sleeps", { ms: 0 }, { permission: "always" })).success).toBe(true);
    expect(readGrants(state)).toContainEqual({ scope: project, rule: RULE("sleeps"), folder: realpathSync(fixture("gates")), grantedAt: expect.any(String) });
    expect((await gates.invoke("sleeps", { ms: 0 })).success).toBe(true); // the grant answers a gate that answers
    const late = await within(gates.gate("sleeps", { ms: 10_000 }), 8000, "the gate decision");
    expect(late).toMatchObject({ ask: true, source: "gate-failed", granted: false });
    expect(await within(gates.invoke("sleeps", { ms: 10_000 }), 8000, "the call")).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
  }, 30_000);

  test("a call the gate narrows asks, though Always was granted for the tool's other calls", async () => {
    using dir = tempDir();
    const { session, gates, state } = await withGrants(dir.path, []);
    await using _ = session;
    expect((await gates.invoke("narrows_sometimes", { sharp: 0 }, { permission: "always" })).success).toBe(true);
    expect(readGrants(state).map((g) => g.rule)).toContain(RULE("narrows_sometimes"));
    expect((await gates.invoke("narrows_sometimes", { sharp: 0 })).output.arguments).toEqual({ sharp: 0 }); // granted
    expect(await gates.gate("narrows_sometimes", { sharp: 1 })).toMatchObject({ ask: true, display: "a sharp call", alwaysOffered: false, granted: false });
    expect(await gates.invoke("narrows_sometimes", { sharp: 1 })).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
  });

  test.each(["asks_narrow", "widen"])("a leftover grant for %s, whose gate withholds Always, answers nothing", async (tool) => {
    using dir = tempDir();
    const { session, gates } = await withGrants(dir.path, [tool]);
    await using _ = session;
    expect(await gates.gate(tool)).toMatchObject({ ask: true, alwaysOffered: false, source: "gate", granted: false });
    expect(await gates.invoke(tool)).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
  });

  test("a gated: true tool that no longer offers Always (alwaysAskable: false) asks, though its grant remains", async () => {
    using dir = tempDir();
    const { session, gates } = await withGrants(dir.path, ["manifest_true", "manifest_true_narrow"]);
    await using _ = session;
    expect((await gates.invoke("manifest_true", { n: 1 })).output.arguments).toEqual({ n: 1 }); // its twin's grant answers
    expect(await gates.gate("manifest_true_narrow")).toMatchObject({ ask: true, alwaysOffered: false, source: "manifest", granted: false });
    expect(await gates.invoke("manifest_true_narrow")).toMatchObject({ permissionDenied: true, decidedBy: "policy" });
  });
});
