/**
 * plugin-host/process-sandbox.ts, the pure parts: the --call-sandbox argument, the calls' policy
 * (the snapshot and the allowed outside paths added, nothing else), the launcher's refusal read
 * from a call's stderr, and the __host refusal. The kernel's side is cortex-process-sandbox.test.ts.
 */
import { expect, test } from "bun:test";
import { callPolicy, launcherRefusal, readCallSandbox, sandboxCall } from "../../src/plugin-host/process-sandbox.ts";
import { planSandbox, probeKernel } from "../../src/sandbox/plan.ts";
import { SANDBOX_REFUSED_EXIT, SANDBOX_REFUSED_LINE, type SandboxPolicy } from "../../src/protocol/sandbox-policy.ts";

const POLICY: SandboxPolicy = { plugin: "p", read: ["/plugin"], write: ["/project/out"], net: "none", tmpBase: "/run/x", accepts: [] };

test("--call-sandbox: the launcher's command and the policy, or an error naming the shape", () => {
  expect(readCallSandbox(JSON.stringify({ launcher: ["/bin/cxagent"], policy: POLICY }))).toEqual({ launcher: ["/bin/cxagent"], policy: POLICY });
  for (const bad of ["", "[]", "{}", JSON.stringify({ launcher: "/bin/cxagent", policy: POLICY }), JSON.stringify({ launcher: [1], policy: POLICY }), JSON.stringify({ launcher: ["/bin/cxagent", 1], policy: POLICY }), JSON.stringify({ launcher: [], policy: "{}" }), JSON.stringify({ launcher: [], policy: null }), JSON.stringify({ launcher: [] })]) {
    expect(readCallSandbox(bad)).toEqual({ error: '--call-sandbox is not {"launcher": [...], "policy": {...}}' });
  }
});

test("the calls' policy adds the snapshot (read, execute) and the outside paths allowed, keeping the rest", () => {
  expect(callPolicy(POLICY, "/snap/plugin", { commands: ["/opt/tool"], folders: ["/srv/work"] })).toEqual({
    ...POLICY,
    read: ["/plugin", "/snap/plugin", "/srv/work"],
    execute: ["/snap/plugin", "/opt/tool"],
  });
  expect(callPolicy({ ...POLICY, execute: ["/already"] }, "/snap/plugin", { commands: [], folders: [] }).execute).toEqual(["/already", "/snap/plugin"]);
});

test("a launcher's refusal is its exit status and its one line; anything else is not one", () => {
  const line = `${SANDBOX_REFUSED_LINE}${JSON.stringify({ layer: "seccomp", why: "no filter" })}`;
  expect(launcherRefusal(SANDBOX_REFUSED_EXIT, `noise\n${line}\n`)).toEqual({ layer: "seccomp", why: "no filter" });
  expect(launcherRefusal(SANDBOX_REFUSED_EXIT - 1, line)).toBeNull();
  expect(launcherRefusal(SANDBOX_REFUSED_EXIT, "exit 78 of the tool's own")).toBeNull();
  expect(launcherRefusal(SANDBOX_REFUSED_EXIT, `${SANDBOX_REFUSED_LINE}{not json`)).toBeNull();
});

// sandboxedCommand plans against this kernel: where it lacks a layer the policy needs, it refuses first.
test.skipIf(planSandbox(POLICY, probeKernel()).missing.length > 0)("a call's command line through the launcher; one holding __host is refused", () => {
  const sandbox = { launcher: ["/usr/bin/cxagent"], policy: POLICY };
  const made = sandboxCall(sandbox, POLICY, ["/snap/plugin/tool.sh", "a"]);
  // Through the native launcher, the plan's words before "--" (issue 39 point 9); without it, `cxagent __sandbox`.
  expect(made.command.slice(-3)).toEqual(["--", "/snap/plugin/tool.sh", "a"]);
  process.env.CXAGENT_SANDBOX_LAUNCHER = "bun";
  try {
    expect(sandboxCall(sandbox, POLICY, ["/snap/plugin/tool.sh", "a"]).command).toEqual(["/usr/bin/cxagent", "__sandbox", JSON.stringify(POLICY), "/snap/plugin/tool.sh", "a"]);
  } finally {
    delete process.env.CXAGENT_SANDBOX_LAUNCHER;
  }
  expect(() => sandboxCall(sandbox, POLICY, ["/snap/plugin/tool.sh", "__host"])).toThrow("its command line holds the word __host");
});
