#!/usr/bin/env bun
/**
 * Proves that no cxagent's snapshot sweep removes another live cxagent's files (issue 37): two
 * cxagents of one user share one folder for module snapshots ($XDG_RUNTIME_DIR/cxagent, private);
 * one loads a module plugin, calls it and unloads it, in a loop; the other opens sessions in a
 * loop, each finding a dead session's record, so each open reaps and sweeps that folder. Every
 * failure of either is counted and shown.
 *
 * Usage: bun scripts/sweep-race.ts [--seconds N] [--same-namespace]
 *   --seconds         how long both loops run (60)
 *   --same-namespace  the opener runs beside the loader; by default it runs in a private pid
 *                     namespace (`unshare --pid --fork --mount-proc`, root only), where /proc
 *                     shows none of the loader's processes: as the suite's pid-namespace tests run
 *
 * Exit 0: both loops ran with zero failures. 1: some failed. Not part of `npm test` (a minute).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Session } from "../src/index.ts";

const root = join(import.meta.dir, "..");
const argv = process.argv.slice(2);
const value = (name: string) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const seconds = Number(value("--seconds") ?? 60);
const role = value("--role");

interface Tally {
  role: string;
  ok: number;
  failed: number;
  failures: string[];
}

/** One loop of one role until the deadline; prints its tally as one JSON line. */
async function loop(role: string, deadline: number): Promise<void> {
  const tally: Tally = { role, ok: 0, failed: 0, failures: [] };
  const fail = (error: unknown) => {
    tally.failed++;
    if (tally.failures.length < 5) tally.failures.push(String((error as Error)?.message ?? error).slice(0, 400));
  };
  if (role === "loader") {
    await using session = await Session.open({ confirmTrust: async () => true });
    while (Date.now() < deadline) {
      try {
        const plugin = await session.load(join(root, "test/fixtures/modules/probe"));
        const result = await plugin.invoke("echo", { n: tally.ok });
        if (!result.success) throw new Error(`echo failed: ${JSON.stringify(result)}`);
        await session.unload(plugin.name);
        tally.ok++;
      } catch (error) {
        fail(error);
      }
    }
  } else {
    const sessions = join(process.env.CXAGENT_STATE_DIR!, "sessions");
    while (Date.now() < deadline) {
      try {
        // a record of a dead session: Session.open reaps, then sweeps the temporary folder
        mkdirSync(sessions, { recursive: true, mode: 0o700 });
        const record = { owner: { pid: 4_194_000 + (tally.ok % 100), startTime: "1" }, createdAt: new Date().toISOString(), processes: [] };
        writeFileSync(join(sessions, `dead-${tally.ok}.json`), JSON.stringify(record));
        const session = await Session.open({});
        await session.close();
        tally.ok++;
      } catch (error) {
        fail(error);
      }
    }
  }
  process.stdout.write(JSON.stringify(tally) + "\n");
}

if (role) {
  await loop(role, Number(value("--until")));
  process.exit(0);
}

// Private all the way up (not under /tmp), as cxagent requires of the folder it writes snapshots to.
const work = mkdtempSync(join(homedir(), ".cxagent-sweep-race-"));
chmodSync(work, 0o700);
const runtime = join(work, "runtime");
mkdirSync(runtime, { mode: 0o700 });
const namespace = !argv.includes("--same-namespace");
const deadline = Date.now() + seconds * 1000;
const self = [process.execPath, join(import.meta.dir, "sweep-race.ts")];
const start = (role: string, state: string, prefix: string[] = []) =>
  Bun.spawn([...prefix, ...self, "--role", role, "--until", String(deadline)], {
    cwd: root,
    env: { ...process.env, XDG_RUNTIME_DIR: runtime, CXAGENT_STATE_DIR: state, CXAGENT_CONFIG_DIR: join(work, "config") },
    stdout: "pipe",
    stderr: "pipe",
  });
// One user's state folder for both, as two cxagents of one user share it; in another pid namespace
// the opener's reaper cannot see the loader's session either, so it keeps a state folder of its own.
const loader = start("loader", join(work, "state"));
const opener = start("opener", namespace ? join(work, "state-namespace") : join(work, "state"), namespace ? ["unshare", "--pid", "--fork", "--mount-proc"] : []);
const tallies: Tally[] = [];
for (const [name, proc] of [["loader", loader], ["opener", opener]] as const) {
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const line = out.trim().split("\n").pop() ?? "";
  try {
    tallies.push(JSON.parse(line) as Tally);
  } catch {
    tallies.push({ role: name, ok: 0, failed: 1, failures: [`exited ${code} without a tally: ${err.slice(-400)}`] });
  }
}
rmSync(work, { recursive: true, force: true });
console.log(`sweep race, ${seconds} s, opener ${namespace ? "in a private pid namespace" : "in the same pid namespace"}:`);
for (const t of tallies) {
  console.log(`  ${t.role}: ${t.ok} ok, ${t.failed} failed${t.role === "loader" ? " (load, call, unload of a module plugin)" : " (session opens, each reaping and sweeping)"}`);
  for (const f of t.failures) console.log(`    ${f}`);
}
process.exit(tallies.every((t) => t.failed === 0) ? 0 : 1);
