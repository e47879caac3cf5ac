/**
 * Cortex process plugins (a manifest.toml of [[native.tools]], a command run per call) through the
 * library: recognized and declared before any code runs, trusted by their folder's hash, gated by
 * their effects, each call one process of its own group, recorded with the session, its
 * environment exactly inherit_env and env, its limits rlimits, and every malformed answer a clean
 * failed call (fault-matrix-process.cases.ts). The fixture is the project's own shell script.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { readRecord, recordFiles } from "../../src/reaper/record.ts";
import { alive, openSession, refusal, ROOT, STATE_DIR, tempDir, until } from "../helpers.ts";
import { PROCESS_ROWS } from "./fault-matrix-process.cases.ts";

const FIXTURE = join(ROOT, "test/fixtures/cortex-process");

/** A copy of the fixture whose manifest.toml is `manifest` (the fixture's own when not given). */
function copy(dir: string, manifest?: (text: string) => string): string {
  const folder = join(dir, "pkg");
  cpSync(FIXTURE, folder, { recursive: true });
  if (manifest) writeFileSync(join(folder, "manifest.toml"), manifest(readFileSync(join(FIXTURE, "manifest.toml"), "utf8")));
  return folder;
}

describe("before it runs", () => {
  test("a manifest.toml listing [[native.tools]] is a Cortex process plugin whose tools are known before it runs", async () => {
    await using session = await openSession();
    const inspected = session.inspect(FIXTURE);
    expect(inspected.kind).toBe("cortex-process");
    expect(inspected.name).toBe("cortex-process");
    expect(inspected.manifest.tools.map((t) => [t.name, t.gated, t.alwaysAskable])).toEqual([["act", false, true], ["hungry", false, true], ["careful", true, false], ["linger", false, true]]);
    expect(inspected.manifest.spawns).toBe(true);
    expect(inspected.process).toMatchObject({ manifest: join(FIXTURE, "manifest.toml"), runs: [{ tool: "act", command: "tool.sh", outside: [] }, { tool: "hungry", command: "hungry.sh" }, { tool: "careful" }, { tool: "linger" }] });
    expect(inspected.loadSet.files.map((f) => f.path)).toEqual(["hungry.sh", "manifest.toml", "tool.sh"]);
  });

  test("a command outside its folder is refused unless allow_host_paths says so; then the trust request names it", async () => {
    using dir = tempDir();
    const outside = copy(dir.path, (t) => t.replace('command = "hungry.sh"', 'command = "../elsewhere.sh"'));
    await using session = await openSession();
    const error = (() => {
      try {
        session.inspect(outside);
      } catch (e) {
        return e as CxError;
      }
    })()!;
    expect(error).toBeInstanceOf(CxError);
    expect(error.code).toBe("E_MANIFEST");
    expect(error.message).toContain('native.tools[1].command: "../elsewhere.sh" is outside the plugin\'s folder; set [native] allow_host_paths = true to allow it');
    writeFileSync(join(outside, "manifest.toml"), readFileSync(join(outside, "manifest.toml"), "utf8").replace('isolation = "process"', 'isolation = "process"\nallow_host_paths = true'));
    expect(session.inspect(outside).process!.runs[1]!.outside).toEqual(["../elsewhere.sh"]);
  });

  test("it is approved by its folder's hash before any command runs: unapproved, nothing runs", async () => {
    using dir = tempDir();
    const folder = copy(dir.path, (t) => t.replace('command = "tool.sh"', 'command = "marker.sh"'));
    writeFileSync(join(folder, "marker.sh"), `#!/bin/sh\ntouch ${join(dir.path, "ran")}\necho '"ran"'\n`);
    chmodSync(join(folder, "marker.sh"), 0o755);
    await using session = await openSession({ stateDir: join(dir.path, "state"), confirmTrust: async () => false });
    const error = await refusal(session.load(folder));
    expect(error.code).toBe("E_DENIED");
    expect(() => readFileSync(join(dir.path, "ran"))).toThrow();
  });
});

describe("each call, one process", () => {
  test.each(PROCESS_ROWS.map((r) => [r.name, r] as const))("%s", async (_, row) => {
    using dir = tempDir();
    const at = join(dir.path, "pids");
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    const call = plugin.invoke("act", { fault: row.fault, at });
    if ("error" in row.expected) {
      const error = await refusal(call);
      expect(error.code as string).toBe(row.expected.error);
      expect(error.message).toContain(row.expected.says);
    } else {
      const result = await call;
      expect(result.success).toBe(row.expected.success);
      if (row.expected.content !== undefined) expect(result.output.content).toBe(row.expected.content);
      if (row.expected.errorMessage !== undefined) expect(result.errorMessage).toBe(row.expected.errorMessage);
    }
    // what it started (hang, orphan) is ended with the call
    const pids = readFileSync(at, { encoding: "utf8", flag: "a+" }).trim().split(" ").filter(Boolean).map(Number);
    await until(() => pids.every((p) => !alive(p)), 5000, "what the call started to be ended");
    // the plugin carries on
    expect((await plugin.invoke("act", { fault: "ok" })).output.content).toBe('{"tool":"act","input":{"fault":"ok"}}');
    if (row.fault === "hang" || row.fault === "orphan") expect(pids).toHaveLength(2);
  }, 20_000);

  test("its environment is exactly inherit_env and env; it inherits no descriptor but its three pipes", async () => {
    await using session = await openSession({ env: { CXAGENT_TEST_SECRET: "must-not-pass" } });
    const plugin = await session.load(FIXTURE);
    const env = String((await plugin.invoke("act", { fault: "env" })).output.content).trim().split(" ");
    expect(env.map((e) => e.split("=")[0]).sort()).toEqual(["FIXTURE_MARK", "PATH", "PWD"]);
    expect(env).toContain("FIXTURE_MARK=set-by-manifest");
    // ls's own descriptor of /proc/self/fd is the fourth
    expect((await plugin.invoke("act", { fault: "fds" })).output.content).toBe("0 1 2 3 ");
  });

  test("max_memory_bytes and max_cpu_secs are its rlimits; past them the call fails naming the signal", async () => {
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    expect((await plugin.invoke("hungry", { what: "limits" })).output.content).toBe("32768 1");
    const memory = await refusal(plugin.invoke("hungry", { what: "memory" }));
    expect(memory.message).toContain("tool 'hungry' (hungry.sh) was killed by SIGSEGV (perhaps short of memory under its max_memory_bytes, 33554432 bytes: RLIMIT_AS)");
    const cpu = await refusal(plugin.invoke("hungry", { what: "cpu" }));
    expect(cpu.message).toContain("tool 'hungry' (hungry.sh) was killed by SIGXCPU (past its max_cpu_secs, 1 s of CPU: RLIMIT_CPU)");
  }, 20_000);

  test("each call's process is recorded with the session; abandoned, its whole group is ended", async () => {
    using dir = tempDir();
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    const at = join(dir.path, "pids");
    // linger has no timeout_secs of its own: only the abandonment ends it
    const call = plugin.invoke("linger", { fault: "hang", at }, { timeoutMs: 1000 });
    await until(() => readFileSync(at, { encoding: "utf8", flag: "a+" }).trim().split(" ").length === 2, 5000, "the pids");
    const [shell, sleeper] = readFileSync(at, "utf8").trim().split(" ").map(Number) as [number, number];
    await until(() => recordFiles(STATE_DIR).flatMap((f) => readRecord(f)?.processes ?? []).some((p) => p.pid === shell && p.kind === "child"), 5000, "the call's process in the record");
    const error = await refusal(call);
    expect(error.code).toBe("E_TIMEOUT");
    await until(() => !alive(shell) && !alive(sleeper), 5000, "the call's group to be ended");
  }, 20_000);

  test("its plugin host killed mid-call: the call fails E_CRASHED, and the call's recorded group is ended with the host", async () => {
    using dir = tempDir();
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    const at = join(dir.path, "pids");
    const call = refusal(plugin.invoke("linger", { fault: "hang", at }));
    await until(() => readFileSync(at, { encoding: "utf8", flag: "a+" }).trim().split(" ").length === 2, 5000, "the pids");
    const [shell, sleeper] = readFileSync(at, "utf8").trim().split(" ").map(Number) as [number, number];
    // the call's shell is the plugin host's child
    const host = Number(readFileSync(`/proc/${shell}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
    expect(host).toBeGreaterThan(1);
    expect(host).not.toBe(process.pid);
    process.kill(host, "SIGKILL");
    const error = await call;
    expect(error.code).toBe("E_CRASHED");
    await until(() => !alive(shell) && !alive(sleeper), 5000, "the call's group to be ended after its host died");
    // the next call starts a fresh plugin host
    expect((await plugin.invoke("act", { fault: "ok" })).success).toBe(true);
  }, 20_000);

  test("calls run at once, each its own process", async () => {
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => plugin.invoke("act", { fault: `n${i}` })));
    expect(results.map((r) => r.output.content)).toEqual(Array.from({ length: 8 }, (_, i) => `{"tool":"act","input":{"fault":"n${i}"}}`));
  });

  test("tool selection narrows its tools as any plugin's: a hidden tool is neither listed nor run", async () => {
    await using session = await openSession();
    const plugin = await session.load(FIXTURE, { tools: { deny: ["hungry", "linger"] } });
    expect(plugin.tools.map((t) => t.name)).toEqual(["act", "careful"]);
    const error = await refusal(plugin.invoke("hungry", { what: "limits" }));
    expect(error.message).toContain("hungry");
  });

  test("a tool whose effects need confirmation asks, as a Cortex native tool's do", async () => {
    await using session = await openSession();
    const plugin = await session.load(FIXTURE);
    const denied = await plugin.invoke("careful", {}, { permission: "deny" });
    expect(denied).toMatchObject({ permissionDenied: true });
    expect((await plugin.invoke("careful", { fault: "ok" }, { permission: "once" })).success).toBe(true);
  });
});

