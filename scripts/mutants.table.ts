/**
 * Which tests answer for which source file, for `npm run mutants` (scripts/mutants.ts): each
 * file's mutants are run against these test files only, the ones written to notice a change in
 * it. `fixtures: true` when those tests load the compiled test fixtures: the sandbox then builds
 * its own (some are linked with absolute paths into the tree they were built in).
 *
 * A file joins the table with the tests that should catch a change in it; a survivor either gets
 * a test that kills it or an entry in test/mutants-accepted.json saying why no test can.
 */
export interface MutantTarget {
  tests: string[];
  fixtures?: boolean;
  /** Only the tests of these files whose names match (bun test -t), where the rest of a slow file tests other things. */
  only?: Record<string, string>;
}

const STATE = "test/integration/state-files.test.ts";
const LOCKS = "test/integration/state-locks.test.ts";

export const MUTANT_TARGETS: Record<string, MutantTarget> = {
  "src/inert.ts": { tests: ["test/unit/inert.test.ts"] },
  "src/files.ts": { tests: ["test/integration/files.test.ts", STATE, LOCKS], fixtures: true },
  "src/lock.ts": { tests: [LOCKS, STATE], fixtures: true },
  "src/session/selection.ts": { tests: ["test/unit/tool-selection.test.ts"] },
  "src/session/compare.ts": { tests: ["test/unit/compare.test.ts", "test/unit/check-rules.test.ts", "test/unit/manifest.test.ts"] },
  "src/trust/hash.ts": { tests: ["test/unit/hash.test.ts"] },
  "src/trust/approvals.ts": { tests: ["test/unit/approvals-plain.test.ts", "test/unit/approvals.test.ts"] },
  "src/elf/elf.ts": { tests: ["test/unit/elf-bounds.test.ts", "test/unit/elf.test.ts", "test/integration/dependency-edges.test.ts"], fixtures: true },
  "src/elf/symbols.ts": { tests: ["test/unit/elf-symbols.test.ts", "test/unit/check-rules.test.ts"], fixtures: true },
  "src/trust/dependencies.ts": { tests: ["test/integration/dependency-edges.test.ts", "test/integration/dependencies.test.ts"], fixtures: true },
  "src/trust/grants.ts": { tests: ["test/unit/grants.test.ts", "test/integration/gate.test.ts"], fixtures: true },
  "src/trust/check.ts": { tests: ["test/unit/trust-check.test.ts", "test/integration/trust.test.ts", "test/e2e/trust-cli.test.ts"], fixtures: true },
  // the system's loader (ld.so's cache, default folders), which the dependency plan asks; module plugins never reach it
  "src/trust/loader.ts": { tests: ["test/unit/system-loader.test.ts", "test/integration/dependency-edges.test.ts"] },
  "src/reaper/ours.ts": { tests: ["test/unit/ours.test.ts", "test/integration/registration.test.ts"], fixtures: true },
  "src/reaper/proc.ts": { tests: ["test/unit/proc.test.ts", "test/unit/ours.test.ts", "test/integration/registration.test.ts"], fixtures: true },
  "src/reaper/escalate.ts": { tests: ["test/unit/escalate.test.ts", "test/unit/escalate-edges.test.ts", "test/unit/ours.test.ts", "test/integration/reap.test.ts"], fixtures: true },
  "src/reaper/record.ts": { tests: ["test/unit/session-record.test.ts", "test/integration/reap.test.ts", STATE], fixtures: true },
  "src/reaper/reap.ts": { tests: ["test/unit/reap-records.test.ts", "test/integration/reap.test.ts", "test/integration/orphans.test.ts"], fixtures: true },
  "src/host/gate.ts": { tests: ["test/unit/gate-decide.test.ts", "test/unit/tool-selection.test.ts", "test/integration/gate.test.ts"], fixtures: true },
  "src/sandbox/launch-plan.ts": { tests: ["test/unit/sandbox-plan.test.ts", "test/integration/sandbox.test.ts"], fixtures: true },
  "src/host/permit.ts": { tests: ["test/integration/gate.test.ts"], fixtures: true },
  "src/check/denials.ts": { tests: ["test/unit/check-denials.test.ts", "test/integration/check.test.ts"], fixtures: true, only: { "test/integration/check.test.ts": "reads-undeclared" } },
  "src/host/lease-pool.ts": { tests: ["test/integration/sandbox-lease.test.ts"] },
  "src/session/leases.ts": { tests: ["test/integration/sandbox-lease.test.ts"] },
  "src/sandbox/limit-cause.ts": { tests: ["test/integration/sandbox-limits.test.ts"], fixtures: true },
  "src/sandbox/widening.ts": { tests: ["test/unit/sandbox-widening.test.ts"] },
  "src/sandbox/seccomp.ts": { tests: ["test/unit/sandbox-seccomp.test.ts", "test/integration/sandbox-seccomp.test.ts"], fixtures: true },
  "src/plugin-host/process-sandbox.ts": { tests: ["test/unit/process-sandbox.test.ts", "test/integration/cortex-process-sandbox.test.ts"], fixtures: true },
  "src/protocol/cortex-process.ts": {
    tests: ["test/unit/cortex-process-manifest.test.ts", "test/integration/cortex-process.test.ts", "test/e2e/cortex-process-cli.test.ts"],
    only: { "test/integration/cortex-process.test.ts": "before it runs", "test/e2e/cortex-process-cli.test.ts": "describe lists" },
  },
  "src/plugin-host/process-run.ts": { tests: ["test/unit/process-run.test.ts", "test/unit/end-group.test.ts"] },
  "src/plugin-host/process.ts": {
    tests: ["test/unit/process-answer.test.ts", "test/unit/process-start.test.ts", "test/integration/cortex-process-host.test.ts", "test/integration/cortex-process.test.ts", "test/integration/cortex-process-sandbox.test.ts"],
    only: {
      "test/integration/cortex-process.test.ts": "environment|rlimits|recorded|hangs past|300 KB|a JSON object",
      "test/integration/cortex-process-sandbox.test.ts": "is confined|a command outside the folder runs|readable though no declared path|a layer this kernel lacks",
    },
  },
  // (its branches with one module plugin in test/integration/plugin-handle.test.ts, ~8 s; then the native, Cortex and leased cases that reach what a module cannot)
  "src/host/plugin.ts": {
    tests: [
      "test/integration/plugin-handle.test.ts",
      "test/integration/plugin-change.test.ts",
      "test/integration/gate.test.ts",
      "test/integration/resilience.test.ts",
      "test/integration/tool-selection.test.ts",
      "test/integration/poll-command.test.ts",
      "test/integration/sandbox-lease.test.ts",
      "test/integration/cortex.test.ts",
    ],
    fixtures: true,
    only: {
      "test/integration/plugin-change.test.ts": "onChange",
      "test/integration/gate.test.ts": "a gate that segfaults|cancelled while its permission|once, deny, and always",
      "test/integration/resilience.test.ts": "every worker stuck|crashes:",
      "test/integration/tool-selection.test.ts": "are not in plugin.tools|asks although",
      "test/integration/poll-command.test.ts": "two commands at once|does not hold the next",
      "test/integration/sandbox-lease.test.ts": "under a lease, a write|would widen anything",
      "test/integration/cortex.test.ts": "timeout_secs|its name is the plugin.s",
    },
  },
  "src/host/prepared.ts": { tests: ["test/e2e/prepared-host.test.ts"], fixtures: true },
  // (the loader's checks one by one in test/unit/module-loader.test.ts; of the sessions' tests, those that import through a real plugin host)
  "src/plugin-host/module-loader.ts": {
    tests: ["test/unit/module-loader.test.ts", "test/integration/module-trust.test.ts", "test/integration/module-plugins.test.ts"],
    only: {
      "test/integration/module-trust.test.ts": "outside its folder is refused|load from the approved bytes|not approved: importing",
      "test/integration/module-plugins.test.ts": "loads from <stem>|a .js or .mjs module",
    },
  },
  "src/plugin-host/harden.ts": { tests: ["test/unit/harden.test.ts", "test/integration/descriptors.test.ts", "test/integration/plugin-host.test.ts"], fixtures: true },
  "src/mcp/permission.ts": { tests: ["test/unit/mcp-mapping.test.ts", "test/mcp/stdio.test.ts"], fixtures: true, only: { "test/mcp/stdio.test.ts": "permission" } },
  // (the request guard's pure checks and the endpoint in-process first; of http.test.ts, not the conformance suites, which test the SDK)
  "src/mcp/http.ts": {
    tests: ["test/unit/mcp-http.test.ts", "test/integration/mcp-http-serve.test.ts", "test/unit/mcp-mapping.test.ts", "test/mcp/http-limits.test.ts", "test/mcp/http.test.ts"],
    fixtures: true,
    only: { "test/mcp/http.test.ts": "the request guard|who is calling|a second local user" },
  },
  // Issues 40 and 41: secrets and large results.
  "src/secrets/access.ts": { tests: ["test/unit/secret-bindings.test.ts"] },
  "src/secrets/echo.ts": { tests: ["test/unit/echo.test.ts", "test/unit/secret-bindings.test.ts"] },
  "src/secrets/redact.ts": { tests: ["test/unit/redact.test.ts", "test/unit/redact-worst.test.ts", "test/unit/redact-forms.test.ts", "test/unit/secret-bindings.test.ts"] },
  "src/secrets/resolve.ts": { tests: ["test/unit/secret-resolve.test.ts", "test/unit/secret-bindings.test.ts"] },
  "src/secrets/broker.ts": { tests: ["test/unit/secret-broker.test.ts", "test/unit/secret-bindings.test.ts"] },
  "src/results/refs.ts": { tests: ["test/integration/result-refs.test.ts", "test/integration/outputs.test.ts"], fixtures: true },
  // (test/integration/result-store-races.test.ts holds its races, with processes and the CLI: too slow for 341 runs; npm run guards holds their guards)
  "src/results/store.ts": { tests: ["test/unit/result-store.test.ts", "test/unit/result-store-edges.test.ts"] },
  "src/results/page.ts": { tests: ["test/unit/result-page.test.ts", "test/unit/deliver.test.ts"] },
  "src/host/read-cap.ts": { tests: ["test/unit/read-cap.test.ts", "test/integration/line-cap.test.ts"], fixtures: true },
  "src/results/spill.ts": { tests: ["test/unit/spill.test.ts", "test/unit/spill-edges.test.ts", "test/integration/outputs-secrets.test.ts"], fixtures: true },
  // (the MCP test holds the 100 KiB default where a model reads the result)
  "src/results/deliver.ts": {
    tests: ["test/unit/deliver.test.ts", "test/unit/deliver-edges.test.ts", "test/integration/outputs.test.ts", "test/mcp/results.test.ts"],
    fixtures: true,
    only: { "test/mcp/results.test.ts": "a 300 KB result" },
  },
  // (of line-cap, the read cap and the runaway: its 70 MiB answer and 65 MiB argument are the shim's and the request's caps; the 70 MiB line on the pipe, 3 s a run, is the unit tests' overflow)
  "src/host/lines.ts": {
    tests: ["test/unit/lines.test.ts", "test/unit/lines-edges.test.ts", "test/integration/line-cap.test.ts"],
    fixtures: true,
    only: { "test/integration/line-cap.test.ts": "own read cap|no line end" },
  },
  // Issue 42: what `cxagent mcp` gained (lazy hosts, describe at approval, our own stdio front).
  "src/cli/commands/approve.ts": {
    tests: ["test/e2e/approve-cli.test.ts", "test/mcp/cortex-approve.test.ts", "test/e2e/trust-cli.test.ts"],
    fixtures: true,
    only: { "test/e2e/trust-cli.test.ts": "approval lifecycle" },
  },
  // (test/mcp/lazy.test.ts, live.test.ts and cortex-lazy.test.ts hold the same through `cxagent mcp`: 10 s a run together, without a run's load)
  "src/mcp/lazy.ts": { tests: ["test/integration/mcp-lazy.test.ts"], fixtures: true },
  // (test/mcp/stdio-front-routing.test.ts holds the same routing through `cxagent mcp` processes: 16 s a run)
  "src/mcp/stdio-front.ts": { tests: ["test/unit/mcp-stdio-front.test.ts", "test/integration/mcp-stdio-front.test.ts", "test/mcp/stdio-front.test.ts"], fixtures: true },
};
