#!/usr/bin/env bun
/**
 * `npm run agents:check` (issue 42): do the agent CLIs of README's "Use it from your agent" see
 * cxagent's tools? It installs each CLI's newest release from npm into a fresh folder, gives it a
 * home of its own holding the configuration README shows (the command `cxagent mcp`, through a
 * wrapper that keeps the server's --verbose log), and runs that CLI's own command that connects to
 * its servers. An agent passes when cxagent's log shows that CLI asking `tools/list` and getting the
 * calculator's 3 tools (and, where its command prints a status, the status says connected).
 *
 * Some CLIs connect only when asked something: they are run headless against a model address where
 * nothing listens (127.0.0.1:9), so they start their servers, list the tools, and then fail to reach
 * the model; no account and no network is used. GitHub Copilot CLI asks for a GitHub sign-in before
 * it starts any server: without COPILOT_GITHUB_TOKEN it is reported as "configured, not connected".
 *
 * Usage: bun scripts/agents-check.ts [--only <bin>[,<bin>]] [--keep]
 *   --only  the CLIs to check by command name (claude, codex, gemini, qwen, opencode, copilot, cn)
 *   --keep  keep the folder with the installed CLIs and their homes (printed at the end)
 *
 * Needs npm and the network (the npm registry). Not part of `npm test` or .ci/run. Exit 0 when every
 * checked CLI saw the tools; 1 otherwise.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const argv = process.argv.slice(2);
const onlyAt = argv.indexOf("--only");
const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? "").split(",")) : undefined;
const keep = argv.includes("--keep");
const TOOL_COUNT = 3;
const DEAD_MODEL = "http://127.0.0.1:9/v1";

const say = (line: string) => console.error(`agents:check: ${line}`);

function run(cmd: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; stdin?: string } = {}) {
  const proc = Bun.spawnSync(cmd, {
    cwd: options.cwd ?? root,
    env: options.env ?? (process.env as Record<string, string>),
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
    timeout: options.timeoutMs ?? 600_000,
  });
  return { code: proc.exitCode ?? -1, out: proc.stdout.toString() + proc.stderr.toString() };
}

function must(cmd: string[], what: string, options: Parameters<typeof run>[1] = {}): string {
  const result = run(cmd, options);
  if (result.code !== 0) {
    say(`${what} failed (exit ${result.code}):\n${result.out.slice(-2000)}`);
    process.exit(1);
  }
  return result.out;
}

// 1. cxagent itself, and the calculator approved by path as README's examples do.
say("building the examples and the binary");
const bun = process.execPath;
must([bun, "scripts/build-native.ts", "examples"], "building the examples");
must([bun, "scripts/compile.ts"], "building dist/cxagent");
const cxagent = join(root, "dist", "cxagent");
const calculator = join(root, "examples", "calculator");

// Not under /tmp: cxagent refuses state in a folder every user can write.
const base = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "cxagent");
mkdirSync(base, { recursive: true, mode: 0o700 });
const work = mkdtempSync(join(base, "agents-check-"));
chmodSync(work, 0o700);
const home = join(work, "home");
const project = join(work, "project");
const prefix = join(work, "cli");
for (const dir of [home, project, prefix]) mkdirSync(dir, { recursive: true, mode: 0o700 });
const log = join(work, "mcp.log");
const wrapper = join(work, "cxagent-mcp");
writeFileSync(wrapper, `#!/bin/sh\nexec '${cxagent}' mcp --verbose 2>>'${log}'\n`, { mode: 0o700 });

const baseEnv: Record<string, string> = {
  PATH: `${join(prefix, "node_modules", ".bin")}:${join(root, "dist")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  HOME: home,
  LANG: "C.UTF-8",
  NO_COLOR: "1",
  TERM: "dumb",
};
const described = JSON.parse(must([cxagent, "describe", calculator, "--json"], "describing the calculator", { env: baseEnv }));
must([cxagent, "approve", calculator, "--hash", described.hash], "approving the calculator", { env: baseEnv });

interface Agent {
  /** The command, as README names it. */
  bin: string;
  title: string;
  pkg: string;
  /** Writes the configuration README shows (a command of the CLI, or its file). */
  configure(): void;
  /** Runs the CLI's own command that connects; returns its output. */
  connect(): { code: number; out: string } | Promise<{ code: number; out: string }>;
  /** Where the output states a status: what it must match. */
  status?: RegExp;
  /** Why the CLI cannot be checked here, if it cannot. */
  unavailable?(): string | undefined;
}

const writeJson = (path: string, value: unknown) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
};
const trustProject = (folder: string) => writeJson(join(home, folder, "trustedFolders.json"), { [project]: "TRUST_FOLDER" });
const cli = (args: string[], extra: Record<string, string> = {}, stdin?: string) =>
  run(args, { cwd: project, env: { ...baseEnv, ...extra }, timeoutMs: 180_000, stdin });
const listedYet = () => /tools\/list from /.test(readFileSync(log, "utf8"));

/** A headless run against the dead model address: stopped once cxagent saw tools/list (they retry the model for minutes). */
async function headless(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  // A group of its own: these CLIs start themselves again as a child, which holds the pipes.
  const proc = Bun.spawn(args, { cwd: project, env: { ...baseEnv, ...extra }, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
  const out = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(([a, b]) => a + b);
  const deadline = Date.now() + 180_000;
  while (proc.exitCode === null && !listedYet() && Date.now() < deadline) await Bun.sleep(200);
  await Bun.sleep(500); // let the CLI finish its list before it is stopped
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, signal);
    } catch {} // the group has ended
  };
  group("SIGTERM");
  const hard = setTimeout(() => group("SIGKILL"), 5000);
  const code = await proc.exited;
  const text = await out;
  clearTimeout(hard);
  group("SIGKILL");
  return { code, out: text };
}

const AGENTS: Agent[] = [
  {
    bin: "claude",
    title: "Claude Code",
    pkg: "@anthropic-ai/claude-code",
    configure: () => void must(["claude", "mcp", "add", "cxagent", "--", wrapper], "claude mcp add", { cwd: project, env: baseEnv }),
    connect: () => cli(["claude", "mcp", "list"]),
    status: /cxagent: .*Connected/,
  },
  {
    bin: "codex",
    title: "Codex",
    pkg: "@openai/codex",
    configure: () => void must(["codex", "mcp", "add", "cxagent", "--", wrapper], "codex mcp add", { cwd: project, env: baseEnv }),
    // `codex mcp list` reads the configuration only; the app server's status list connects.
    connect: codexStatus,
    status: /"name":"cxagent"/,
  },
  {
    bin: "gemini",
    title: "Gemini CLI",
    pkg: "@google/gemini-cli",
    configure: () => {
      must(["gemini", "mcp", "add", "cxagent", wrapper], "gemini mcp add", { cwd: project, env: baseEnv });
      trustProject(".gemini");
      writeJson(join(home, ".gemini", "settings.json"), { security: { auth: { selectedType: "gemini-api-key" } } });
    },
    connect: async () => {
      const health = cli(["gemini", "mcp", "list"]);
      const asked = await headless(["gemini", "-p", "say hi"], { GEMINI_API_KEY: "none", GOOGLE_GEMINI_BASE_URL: DEAD_MODEL });
      return { code: health.code, out: `${health.out}\n${asked.out}` };
    },
    status: /cxagent: .*Connected/,
  },
  {
    bin: "qwen",
    title: "Qwen Code",
    pkg: "@qwen-code/qwen-code",
    configure: () => {
      must(["qwen", "mcp", "add", "cxagent", wrapper], "qwen mcp add", { cwd: project, env: baseEnv });
      trustProject(".qwen");
    },
    connect: async () => {
      const health = cli(["qwen", "mcp", "list"]);
      const asked = await headless(["qwen", "--auth-type", "openai", "-p", "say hi"], { OPENAI_API_KEY: "none", OPENAI_BASE_URL: DEAD_MODEL, OPENAI_MODEL: "none" });
      return { code: health.code, out: `${health.out}\n${asked.out}` };
    },
    status: /cxagent: .*Connected/,
  },
  {
    bin: "opencode",
    title: "opencode",
    pkg: "opencode-ai",
    configure: () => writeJson(join(project, "opencode.json"), { mcp: { cxagent: { type: "local", command: [wrapper], enabled: true } } }),
    connect: () => cli(["opencode", "mcp", "list"]),
    status: /cxagent\s+.*connected/,
  },
  {
    bin: "copilot",
    title: "GitHub Copilot CLI",
    pkg: "@github/copilot",
    configure: () => writeJson(join(home, ".copilot", "mcp-config.json"), { mcpServers: { cxagent: { type: "local", command: wrapper, args: [], tools: ["*"] } } }),
    connect: () => headless(["copilot", "-p", "say hi"]),
    unavailable: () => (process.env.COPILOT_GITHUB_TOKEN ? undefined : "its prompt mode asks for a GitHub sign-in before it starts any server (set COPILOT_GITHUB_TOKEN to check it)"),
  },
  {
    bin: "cn",
    title: "Continue CLI",
    pkg: "@continuedev/cli",
    configure: () =>
      writeFileSync(
        join(project, "cn.yaml"),
        ["name: agents-check", "version: 0.0.1", "schema: v1", "models:", "  - name: none", "    provider: openai", "    model: none",
          `    apiBase: ${DEAD_MODEL}`, "    apiKey: none", "    roles: [chat]", "mcpServers:", "  - name: cxagent", `    command: ${wrapper}`, ""].join("\n"),
      ),
    connect: () => headless(["cn", "--config", "./cn.yaml", "-p", "say hi"]),
  },
];

async function codexStatus(): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(["codex", "app-server"], { cwd: project, env: baseEnv, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 180_000);
  const send = (message: unknown) => proc.stdin.write(`${JSON.stringify(message)}\n`);
  send({ id: 1, method: "initialize", params: { clientInfo: { name: "agents-check", version: "1" } } });
  send({ method: "initialized" });
  send({ id: 2, method: "mcpServerStatus/list", params: {} });
  await proc.stdin.flush();
  let seen = "";
  let answer: string | undefined;
  for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
    seen += chunk;
    answer = seen.split("\n").find((line) => line.startsWith('{"id":2,'));
    if (answer) break;
  }
  proc.stdin.end();
  proc.kill("SIGTERM");
  clearTimeout(timer);
  await proc.exited;
  return { code: answer ? 0 : 1, out: answer ?? seen };
}

const chosen = AGENTS.filter((a) => !only || only.has(a.bin));
say(`installing ${chosen.map((a) => a.pkg).join(", ")} from npm into ${prefix}`);
must(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, ...chosen.map((a) => `${a.pkg}@latest`)], "npm install", { env: { ...process.env, HOME: process.env.HOME ?? home } as Record<string, string> });

interface Outcome { title: string; version: string; result: "listed" | "failed" | "not checked"; detail: string; seconds: number }
const outcomes: Outcome[] = [];
for (const agent of chosen) {
  const began = performance.now();
  const version = cli([agent.bin, "--version"]).out.trim().split("\n")[0] ?? "?";
  agent.configure();
  writeFileSync(log, "");
  const why = agent.unavailable?.();
  const { code, out } = why ? { code: 0, out: "" } : await agent.connect();
  const listed = [...readFileSync(log, "utf8").matchAll(/tools\/list from (.+): (\d+) tools/g)];
  const counts = listed.map((m) => Number(m[2]));
  const statusOk = !agent.status || agent.status.test(out);
  let outcome: Outcome["result"];
  let detail: string;
  if (why) {
    outcome = "not checked";
    detail = why;
  } else if (counts.includes(TOOL_COUNT) && statusOk) {
    outcome = "listed";
    detail = `${listed[0]?.[1]} asked tools/list and got ${TOOL_COUNT} tools${agent.status ? "; its status says connected" : ""}`;
  } else {
    outcome = "failed";
    detail = `exit ${code}; ${counts.length ? `tools/list answered with ${counts.join(", ")} tools` : "no tools/list reached cxagent"}${statusOk ? "" : "; its status does not say connected"}\n${out.slice(-1500)}`;
  }
  const seconds = (performance.now() - began) / 1000;
  outcomes.push({ title: agent.title, version, result: outcome, detail, seconds });
  say(`${agent.title} ${version}: ${outcome} (${seconds.toFixed(1)} s): ${detail}`);
}

console.log("| agent | version | cxagent's tools | how |");
console.log("| --- | --- | --- | --- |");
for (const o of outcomes) console.log(`| ${o.title} | ${o.version} | ${o.result} | ${o.detail.split("\n")[0]} |`);
const failed = outcomes.filter((o) => o.result === "failed").length;
const listedCount = outcomes.filter((o) => o.result === "listed").length;
console.log(`\n${outcomes.length} agents: ${listedCount} listed cxagent's tools, ${failed} did not, ${outcomes.length - listedCount - failed} not checked`);
if (keep) say(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
