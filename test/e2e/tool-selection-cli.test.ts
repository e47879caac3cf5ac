/**
 * Choosing tools through the CLI, with real config files: the user's config.json hides tools with
 * globs, the project's .cxagent/config.json can only narrow, and list, describe, load, gate and
 * the permission prompt say which file and which rule made a tool hidden or ask.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { approve, cli, fixture, tempDir, tty } from "../helpers.ts";

const RECORDS = fixture("records-calls");

function world(dir: string, user: object, project?: object) {
  const config = join(dir, "config");
  const state = join(dir, "state");
  const cwd = join(dir, "project");
  mkdirSync(config);
  mkdirSync(join(cwd, ".cxagent"), { recursive: true });
  const marker = join(dir, "calls.log");
  writeFileSync(join(config, "config.json"), JSON.stringify({ plugins: { "records-calls": { file: "records-calls.so", path: RECORDS, ...user } } }));
  const projectFile = join(cwd, ".cxagent", "config.json");
  if (project) writeFileSync(projectFile, JSON.stringify(project));
  return {
    cwd,
    state,
    configFile: join(config, "config.json"),
    projectFile,
    env: { CXAGENT_CONFIG_DIR: config, CXAGENT_STATE_DIR: state, CXAGENT_FX_MARKER: marker },
    calls: () => (existsSync(marker) ? readFileSync(marker, "utf8").trim().split("\n") : []),
    run(args: string[]) {
      return cli([...args, "--cwd", cwd], { env: this.env });
    },
    approved: () => approve(RECORDS, state),
  };
}

describe("list and describe say which rule hides a tool or makes it ask", () => {
  test("globs in config.json and the project's config, in text and JSON", async () => {
    using dir = tempDir();
    const w = world(dir.path, { tools: { allow: ["files_*"], deny: ["files_d*"] } }, { plugins: { "records-calls": { tools: { ask: ["files_?ead"] } } } });
    const listed = await w.run(["list"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(
      [
        `  tools    files_read, files_write, files_delete, net_fetch`,
        `  hidden   files_delete by ${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_d*")`,
        `  hidden   net_fetch by ${w.configFile}: plugins["records-calls"].tools.allow, none of whose patterns matches it`,
        `  asks     files_read on every call, because of ${w.projectFile}: plugins["records-calls"].tools.ask[0] ("files_?ead")`,
      ].join("\n"),
    );
    const json = (await w.run(["list", "--json"])).json().plugins[0];
    expect(json.hidden).toEqual([
      { tool: "files_delete", source: w.configFile, rule: 'plugins["records-calls"].tools.deny[0]', pattern: "files_d*", kind: "deny" },
      { tool: "net_fetch", source: w.configFile, rule: 'plugins["records-calls"].tools.allow', pattern: null, kind: "allow" },
    ]);
    expect(json.asked).toEqual([{ tool: "files_read", source: w.projectFile, rule: 'plugins["records-calls"].tools.ask[0]', pattern: "files_?ead", kind: "ask" }]);

    const described = await w.run(["describe", "records-calls"]);
    expect(described.code).toBe(0);
    expect(described.stdout).toContain("in the model's context (tokens ≈ UTF-8 bytes of {name, description, inputSchema} as JSON ÷ 4):");
    expect(described.stdout).toMatch(new RegExp(`  files_read +~\\d+ tokens  asks on every call because of ${w.projectFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    expect(described.stdout).toContain(`files_delete `);
    expect(described.stdout).toContain(`hidden by ${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_d*")`);
    expect(described.stdout).toMatch(/  total: ~\d+ tokens for 2 of 4 tools, plus ~\d+ tokens of instructions; hiding saves ~\d+ tokens\n/);
  });

  test("describe --json gives each tool's size, and what hiding saves adds up", async () => {
    using dir = tempDir();
    const w = world(dir.path, { tools: { deny: ["net_fetch"] } });
    const { context } = (await w.run(["describe", "records-calls", "--json"])).json();
    const sidecar = JSON.parse(readFileSync(join(RECORDS, "records-calls.plugin.json"), "utf8"));
    const fetch = sidecar.tools.find((t: { name: string }) => t.name === "net_fetch");
    const bytes = Buffer.byteLength(JSON.stringify({ name: "net_fetch", description: fetch.description, inputSchema: { type: "object" } }));
    expect(context.tools.find((t: { name: string }) => t.name === "net_fetch")).toMatchObject({ bytes, tokens: Math.ceil(bytes / 4), visible: false, hiddenBy: { pattern: "net_fetch" } });
    expect(context.hiddenTokens).toBe(Math.ceil(bytes / 4));
    expect(context.visibleTokens).toBe(context.tools.filter((t: { visible: boolean }) => t.visible).reduce((n: number, t: { tokens: number }) => n + t.tokens, 0));
  });
});

describe("a pattern that matches no tool", () => {
  test("is warned about by list and by load", async () => {
    using dir = tempDir();
    const w = world(dir.path, { tools: { deny: ["files_remove"] } }, { plugins: { "records-calls": { tools: { ask: ["fetch_*"] } } } });
    await w.approved();
    const listed = await w.run(["list"]);
    expect(listed.stdout).toContain(`  warning  ${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_remove") matches no tool of plugin 'records-calls'`);
    expect(listed.stdout).toContain(`  warning  ${w.projectFile}: plugins["records-calls"].tools.ask[0] ("fetch_*") matches no tool of plugin 'records-calls'`);
    const loaded = await w.run(["load", "records-calls", "--json"]);
    expect(loaded.code).toBe(0);
    expect(loaded.stderr).toContain(`${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_remove") matches no tool of plugin 'records-calls'`);
    expect(loaded.stderr).toContain(`("fetch_*") matches no tool`);
    expect(loaded.json().unmatched).toEqual([
      { source: w.configFile, rule: 'plugins["records-calls"].tools.deny[0]', pattern: "files_remove", kind: "deny" },
      { source: w.projectFile, rule: 'plugins["records-calls"].tools.ask[0]', pattern: "fetch_*", kind: "ask" },
    ]);
  });
});

describe("a hidden tool cannot be called", () => {
  test("invoke and gate exit 3 with E_TOOL_HIDDEN, and the plugin never hears of them", async () => {
    using dir = tempDir();
    const w = world(dir.path, { tools: { deny: ["files_delete"] } }, { plugins: { "records-calls": { tools: { deny: ["net_*"] } } } });
    await w.approved();
    const invoked = await w.run(["invoke", "records-calls", "files_delete", "--allow", "--json"]);
    expect(invoked.code).toBe(3);
    expect(invoked.json().error).toMatchObject({ code: "E_TOOL_HIDDEN", details: { tool: "files_delete", source: w.configFile, rule: 'plugins["records-calls"].tools.deny[0]' } });
    const gated = await w.run(["gate", "records-calls", "files_delete"]);
    expect(gated.code).toBe(3);
    expect(gated.stderr).toContain(`error tool 'files_delete' of plugin 'records-calls' is hidden by ${w.configFile}: plugins["records-calls"].tools.deny[0] ("files_delete")`);
    const byProject = await w.run(["invoke", "records-calls", "net_fetch"]);
    expect(byProject.code).toBe(3);
    expect(byProject.stderr).toContain(`hidden by ${w.projectFile}: plugins["records-calls"].tools.deny[0] ("net_*")`);
    expect(byProject.stderr).toContain("a project's .cxagent/config.json can only hide more");
    expect(w.calls()).toEqual([]);
    expect((await w.run(["invoke", "records-calls", "files_read"])).stdout).toBe("files_read ran\n");
    expect(w.calls()).toEqual(["invoke files_read"]);
  });
});

describe("the project's config can only narrow", () => {
  test("every widening key is refused by its path, and nothing runs", async () => {
    using dir = tempDir();
    const w = world(dir.path, { invokeTimeoutMs: 1_000 }, {
      pluginPaths: ["/tmp"],
      grants: [],
      plugins: {
        "records-calls": {
          enabled: true,
          file: "other.so",
          path: "/tmp",
          settings: { token: "x" },
          tools: { allow: ["*"], never: ["files_write"] },
          invokeTimeoutMs: 5_000,
          gateTimeoutMs: 10_000,
        },
      },
    });
    await w.approved();
    const r = await w.run(["invoke", "records-calls", "files_read", "--json"]);
    expect(r.code).toBe(3);
    const { error } = r.json();
    expect(error.code).toBe("E_CONFIG");
    expect(error.message).toStartWith(`the project's config file ${w.projectFile} was refused (a project can narrow what your own config.json allows, never widen it):`);
    const at = (key: string) => `plugins["records-calls"].${key}`;
    expect(error.details.problems.map((p: { path: string }) => p.path)).toEqual([
      "pluginPaths",
      "grants",
      at("enabled"),
      at("tools.allow"),
      at("tools.never"),
      at("file"),
      at("path"),
      at("settings"),
      at("invokeTimeoutMs"),
      at("gateTimeoutMs"),
    ]);
    expect(w.calls()).toEqual([]);
  });

  test("a FIFO in place of the file is refused at once, not waited on", async () => {
    using dir = tempDir();
    const w = world(dir.path, {});
    expect(Bun.spawnSync(["mkfifo", w.projectFile]).exitCode).toBe(0);
    const r = await w.run(["list"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`the project's config file ${w.projectFile} was refused`);
    expect(r.stderr).toContain("it is not a regular file");
  });

  test("a project that disables a plugin holds even against --once", async () => {
    using dir = tempDir();
    const w = world(dir.path, {}, { plugins: { "records-calls": { enabled: false } } });
    await w.approved();
    const listed = await w.run(["list"]);
    expect(listed.stdout).toContain("records-calls 1.0.0  [disabled] approved");
    expect(listed.stdout).toContain(`  disabled by ${w.projectFile}: plugins["records-calls"].enabled`);
    const r = await w.run(["load", "records-calls", "--once"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`plugin 'records-calls' is disabled by this project's configuration (${w.projectFile}: plugins["records-calls"].enabled is false)`);
  });
});

describe("a project that makes a tool ask on every call", () => {
  test("prompts on a terminal, saying why, with no Always; gate says why too", async () => {
    using dir = tempDir();
    const w = world(dir.path, {}, { plugins: { "records-calls": { tools: { ask: ["files_read"] } } } });
    await w.approved();
    const r = await tty(["invoke", "records-calls", "files_read", "--args", '{"path":"a"}', "--cwd", w.cwd], [{ after: "Allow this call? [y/N]", send: "y" }], { env: w.env });
    expect(r.code).toBe(0);
    expect(r.output).toContain(`records-calls wants to run files_read with {"path":"a"}\nthis tool asks on every call because of ${w.projectFile}: plugins["records-calls"].tools.ask[0] ("files_read")\ny = allow once, n = deny`);
    expect(r.output).toContain("files_read ran");
    const gate = await w.run(["gate", "records-calls", "files_read"]);
    expect(gate.stdout).toBe(
      `files_read asks on every call because of ${w.projectFile}: plugins["records-calls"].tools.ask[0] ("files_read"): "records-calls wants to run files_read". Always is not offered, and no stored grant answers it.\n`,
    );
    const denied = await w.run(["invoke", "records-calls", "files_read"]);
    expect(denied.code).toBe(4); // no terminal, no --allow
    expect(w.calls()).toEqual(["invoke files_read"]);
  });
});

describe("grants never live in the project folder", () => {
  test("Always is stored in the state folder; a permissions file planted in the project is never read", async () => {
    using dir = tempDir();
    const w = world(dir.path, {}, { plugins: { "records-calls": { tools: { deny: ["net_*"] } } } });
    await w.approved();
    const forged = { grants: [{ scope: w.cwd, rule: "plugin records-calls tool files_write", folder: RECORDS, grantedAt: new Date().toISOString() }] };
    writeFileSync(join(w.cwd, ".cxagent", "permissions.json"), JSON.stringify(forged));
    writeFileSync(join(w.cwd, "permissions.json"), JSON.stringify(forged));
    expect((await w.run(["invoke", "records-calls", "files_write"])).code).toBe(4);
    const r = await tty(["invoke", "records-calls", "files_write", "--cwd", w.cwd], [{ after: "[y/a/N]", send: "a" }], { env: w.env });
    expect(r.code).toBe(0);
    const stored = JSON.parse(readFileSync(join(w.state, "permissions.json"), "utf8")).grants;
    expect(stored.map((g: { rule: string }) => g.rule)).toEqual(["plugin records-calls tool files_write"]);
    expect(readdirSync(w.cwd).sort()).toEqual([".cxagent", "permissions.json"]);
    expect(readdirSync(join(w.cwd, ".cxagent")).sort()).toEqual(["config.json", "permissions.json"]);
    expect(JSON.parse(readFileSync(join(w.cwd, ".cxagent", "permissions.json"), "utf8"))).toEqual(forged);
  });
});

test("instructions leaves out a plugin whose tools are all hidden", async () => {
  using dir = tempDir();
  const w = world(dir.path, { tools: { allow: ["files_read"] } }, { plugins: { "records-calls": { tools: { deny: ["files_*"] } } } });
  await w.approved();
  const r = await w.run(["instructions", "--json"]);
  expect(r.json()).toEqual({ instructions: "", plugins: ["records-calls"], skipped: [] });
  writeFileSync(w.projectFile, "{}");
  expect((await w.run(["instructions"])).stdout).toStartWith("## files_read\n\nUse files_read to read");
});
