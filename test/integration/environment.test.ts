/**
 * What a plugin host is given to run with: an allow-list of the parent's environment
 * (src/session/host-env.ts), what CXAGENT_PASS_ENV names, and what a script passes itself —
 * never a secret of the parent's, never a loader setting.
 */
import { afterEach, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { withRuntimeTuning } from "../../src/host/runtime-tuning.ts";
import { approve, cli, fixture, openSession, ROOT, tempDir, until, writeModule } from "../helpers.ts";

const threadNames = (pid: number | string) => readdirSync(`/proc/${pid}/task`).map((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim());

const saved = { ...process.env };
afterEach(() => {
  for (const key of ["CXAGENT_SECRET_FOR_TEST", "LD_LIBRARY_PATH", "NODE_OPTIONS"]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

test("a plugin sees PATH and HOME, what the script passes, and no secret or loader setting of the parent's", async () => {
  process.env.CXAGENT_SECRET_FOR_TEST = "s3cret";
  process.env.LD_LIBRARY_PATH = "/nonexistent-cxagent-test-folder";
  process.env.NODE_OPTIONS = "--max-old-space-size=64";
  await using session = await openSession({ env: { CXAGENT_PASSED_FOR_TEST: "given" } });
  const plugin = await session.load(fixture("reports-environment"));
  const { env } = (await plugin.invoke("reports_environment")).output as { env: Record<string, string | null> };
  expect(env.PATH).toBe(process.env.PATH!);
  expect(env.HOME).toBe(process.env.HOME!);
  expect(env.CXAGENT_PASSED_FOR_TEST).toBe("given");
  expect(env.CXAGENT_SECRET_FOR_TEST).toBeNull();
  expect(env.LD_LIBRARY_PATH).toBeNull();
  expect(env.NODE_OPTIONS).toBeNull();
});

test("CXAGENT_PASS_ENV names more variables to pass, but never a loader setting", async () => {
  await approve(fixture("reports-environment"));
  const r = await cli(["invoke", fixture("reports-environment"), "reports_environment", "--json"], {
    env: {
      CXAGENT_SECRET_FOR_TEST: "s3cret",
      CXAGENT_PASSED_FOR_TEST: "named",
      LD_LIBRARY_PATH: "/nonexistent-cxagent-test-folder",
      CXAGENT_PASS_ENV: "CXAGENT_PASSED_FOR_TEST,LD_LIBRARY_PATH",
    },
  });
  expect(r.code).toBe(0);
  const env = r.json().result.output.env;
  expect(env).toMatchObject({ CXAGENT_PASSED_FOR_TEST: "named", CXAGENT_SECRET_FOR_TEST: null, LD_LIBRARY_PATH: null });
});

test("a native plugin's host is spawned without the runtime's idle helpers: no block warm-up thread, freed memory kept", async () => {
  // The runtime starts the thread about half a second after it starts (later under load): wait for it.
  await until(() => threadNames("self").includes("JSCWarmUp"), 30_000, "this runtime's JSCWarmUp thread");
  await using session = await openSession();
  const plugin = await session.load(fixture("reports-environment"));
  const { env } = (await plugin.invoke("reports_environment")).output as { env: Record<string, string | null> };
  expect(env.MIMALLOC_PURGE_DELAY).toBe("-1");
  // This runtime has the warm-up thread (the test's own process shows it), so the host is told to go without.
  expect(env.BUN_JSC_useWarmUpMarkedBlocks).toBe("0");
  const host = threadNames(plugin.pid!);
  expect(host.length).toBeGreaterThan(2); // a runtime's threads were read: the shim's pool, the JIT, Bun's own
  expect(host).not.toContain("JSCWarmUp");
  expect(host).not.toContain("mi-scavenger"); // with nothing to hand back later, mimalloc starts no purge thread
});

test("a script's own environment for the plugin wins over the runtime settings; a module's host keeps the allocator's default", async () => {
  await using session = await openSession({ env: { MIMALLOC_PURGE_DELAY: "10" } });
  const plugin = await session.load(fixture("reports-environment"));
  const { env } = (await plugin.invoke("reports_environment")).output as { env: Record<string, string | null> };
  expect(env.MIMALLOC_PURGE_DELAY).toBe("10");
  expect(withRuntimeTuning({ PATH: "/bin" }, "module")).not.toHaveProperty("MIMALLOC_PURGE_DELAY");
  expect(withRuntimeTuning({ PATH: "/bin" }, "cortex")).toMatchObject({ PATH: "/bin", MIMALLOC_PURGE_DELAY: "-1" });
});

test("a plugin host cannot read the parent's environment through /proc, root's neither: the parent blanked it before any host ran", async () => {
  using dir = tempDir();
  const folder = writeModule(
    dir.path,
    "reads-parent",
    `import { readFileSync } from "node:fs";
export default { start() {}, stop() {}, invoke() {
  try {
    const text = readFileSync("/proc/" + process.ppid + "/environ", "latin1");
    return { success: true, output: { secret: text.includes("CXAGENT_SECRET_FOR_TEST"), printable: text.replace(/\\0/g, "").length } };
  } catch (e) {
    return { success: true, output: { refused: e.code } };
  }
} };`,
  );
  await approve(folder);
  const r = await cli(["invoke", folder, "work", "--json"], { env: { CXAGENT_SECRET_FOR_TEST: "s3cret" } });
  expect(r.stderr).toBe("");
  const seen = r.json().result.output;
  if (process.getuid!() === 0) expect(seen).toEqual({ secret: false, printable: 0 });
  else expect(seen).toEqual({ refused: "EACCES" }); // non-dumpable: an ordinary user's host is refused first
});

test("after the blanking, the parent's own environment still works: process.env, getenv, and what a child inherits", () => {
  const script = `
import { dlopen, FFIType } from "bun:ffi";
import { readFileSync } from "node:fs";
import { scrubEnviron } from ${JSON.stringify(join(ROOT, "src/host/nondumpable.ts"))};
import { linuxLibc } from ${JSON.stringify(join(ROOT, "src/libc.ts"))};
const blanked = scrubEnviron(linuxLibc());
const { symbols } = dlopen("libc.so.6", { getenv: { args: [FFIType.cstring], returns: FFIType.cstring } });
const child = Bun.spawnSync(["sh", "-c", "printf %s \\"$CXAGENT_SECRET_FOR_TEST\\""]).stdout.toString();
const proc = readFileSync("/proc/self/environ", "latin1").replace(/\\0/g, "");
console.log(JSON.stringify({ blanked, env: process.env.CXAGENT_SECRET_FOR_TEST, getenv: String(symbols.getenv(Buffer.from("CXAGENT_SECRET_FOR_TEST\\0"))), child, proc }));`;
  const r = Bun.spawnSync([process.execPath, "-e", script], { env: { ...process.env, CXAGENT_SECRET_FOR_TEST: "s3cret" }, stdout: "pipe", stderr: "pipe" });
  expect(r.stderr.toString()).toBe("");
  expect(JSON.parse(r.stdout.toString())).toEqual({ blanked: true, env: "s3cret", getenv: "s3cret", child: "s3cret", proc: "" });
});

test("a host spawned before the runtime showed its warm-up thread does not stop the next from getting the setting", async () => {
  // A fresh process asks at once (the thread starts about half a second later), then once the thread is there.
  const script = `
    import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
    import { withRuntimeTuning } from ${JSON.stringify(join(ROOT, "src/host/runtime-tuning.ts"))};
    const names = () => readdirSync("/proc/self/task").map((t) => readFileSync("/proc/self/task/" + t + "/comm", "utf8").trim());
    // asked while the thread is absent before and after the question (it may start in between)
    let early = names().includes("JSCWarmUp") ? null : withRuntimeTuning({}, "native").BUN_JSC_useWarmUpMarkedBlocks ?? "unset";
    if (names().includes("JSCWarmUp")) early = null;
    while (!names().includes("JSCWarmUp")) await Bun.sleep(5);
    console.log(JSON.stringify({ early, late: withRuntimeTuning({}, "native").BUN_JSC_useWarmUpMarkedBlocks ?? "unset" }));`;
  const proc = Bun.spawnSync([process.execPath, "-e", script], { cwd: ROOT, stderr: "pipe" });
  expect(proc.stderr.toString()).toBe("");
  const { early, late } = JSON.parse(proc.stdout.toString()) as { early: string | null; late: string };
  if (early !== null) expect(early).toBe("unset"); // null: the thread was there before the first question
  expect(late).toBe("0");
}, 60_000);
