/**
 * Everything the measurements need before the first run: the native parts, the compiled binary,
 * the C limit, the benchmark's own plugins in fresh folders, and their approvals — given through
 * the CLI, `cxagent approve <plugin> --hash <hex>`, the way a user pins a hash.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { buildCLimit } from "./c-limit.ts";

export const ROOT = join(import.meta.dir, "../..");
const BUN = process.execPath;

export interface Workspace {
  work: string;
  stateDir: string;
  configDir: string;
  binary: string;
  cLimit: string;
  /** test/fixtures/noop, the trivial tool every call benchmark uses. */
  noop: { folder: string; library: string };
  /** The same tool as a TypeScript plugin (scripts/bench/noop-module.ts). */
  noopModule: string;
  /** The payload plugin (scripts/bench/payload-plugin.c): tools reply and take. */
  payload: { folder: string; library: string };
  /** 32 copies of noop under names of their own (noop0 … noop31), for many plugins at once. */
  many: string[];
  calculator: string;
  crash: string;
  invokeReplies: string;
  cleanup(): void;
}

export function run(cmd: string[], env: Record<string, string> = {}, cwd = ROOT): string {
  const p = Bun.spawnSync(cmd, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (${p.exitCode}): ${p.stderr.toString()}${p.stdout.toString()}`);
  return p.stdout.toString();
}

function cc(args: string[]) {
  run([process.env.CC ?? "cc", "-O2", "-Wall", "-Wextra", "-Werror", ...args]);
}

/** Approves a plugin folder through the CLI: reads its hash with `describe --json`, pins it with `approve --hash`. */
function approve(ws: Pick<Workspace, "binary" | "stateDir" | "configDir">, folder: string) {
  const env = { CXAGENT_STATE_DIR: ws.stateDir, CXAGENT_CONFIG_DIR: ws.configDir };
  const { hash } = JSON.parse(run([ws.binary, "describe", folder, "--json"], env)) as { hash: string };
  run([ws.binary, "approve", folder, "--hash", hash], env);
}

export function prepare(options: { many: number }): Workspace {
  run([BUN, "scripts/build-native.ts", "all"]);
  run([BUN, "scripts/compile.ts"]);
  // In the home, not the shared temporary folder: a module plugin's snapshots go in <state>/run,
  // which must be writable by this user alone all the way up (src/host/private-folder.ts).
  const work = mkdtempSync(join(homedir(), ".cxagent-bench-"));
  const ws = {
    work,
    stateDir: join(work, "state"),
    configDir: join(work, "config"),
    binary: join(ROOT, "dist/cxagent"),
    cLimit: buildCLimit(work),
  };
  mkdirSync(ws.configDir, { recursive: true });

  const noop = join(ROOT, "test/fixtures/build/noop");
  const payload = join(work, "bench-payload");
  mkdirSync(payload);
  cc(["-shared", "-fPIC", "-I", "ffi", "-pthread", "-o", join(payload, "bench-payload.so"), join(import.meta.dir, "payload-plugin.c")]);
  copyFileSync(join(import.meta.dir, "bench-payload.plugin.json"), join(payload, "bench-payload.plugin.json"));

  const noopModule = join(work, "noop-ts");
  mkdirSync(noopModule);
  copyFileSync(join(import.meta.dir, "noop-module.ts"), join(noopModule, "noop-ts.ts"));
  writeFileSync(join(noopModule, "noop-ts.plugin.json"), JSON.stringify({ pluginContract: 4, name: "noop-ts", version: "1.0.0", tools: [{ name: "noop" }] }));

  const many: string[] = [];
  for (let i = 0; i < options.many; i++) {
    const name = `noop${i}`;
    const folder = join(work, "many", name);
    mkdirSync(folder, { recursive: true });
    const manifest = { pluginContract: 4, name, version: "1.0.0", tools: [{ name: `noop_${i}` }] };
    writeFileSync(join(folder, `${name}.plugin.json`), JSON.stringify(manifest));
    const header = join(work, "many", `${name}.h`);
    writeFileSync(header, `#define FX_MANIFEST ${JSON.stringify(JSON.stringify(manifest))}\n`);
    cc(["-shared", "-fPIC", "-Wno-unused-parameter", "-I", "ffi", "-I", "test/fixtures", "-include", header, "-pthread", "-o", join(folder, `${name}.so`), "test/fixtures/noop.c"]);
    many.push(folder);
  }
  const fixture = (name: string) => join(ROOT, "test/fixtures/build", name);
  const calculator = join(ROOT, "examples/calculator");
  const folders = [noop, noopModule, payload, ...many, calculator, fixture("crash-in-invoke"), fixture("invoke-replies")];
  for (const folder of folders) approve(ws, folder);
  return {
    ...ws,
    noop: { folder: noop, library: join(noop, "noop.so") },
    noopModule,
    payload: { folder: payload, library: join(payload, "bench-payload.so") },
    many,
    calculator,
    crash: fixture("crash-in-invoke"),
    invokeReplies: fixture("invoke-replies"),
    cleanup: () => rmSync(work, { recursive: true, force: true }),
  };
}
