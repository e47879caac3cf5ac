/**
 * The sandbox's declaration and plan (issue 39), without a kernel: which paths a manifest may
 * name, how placeholders resolve, and which layers a declaration needs on a kernel that offers
 * less — refused with E_SANDBOX naming the layer, unless the user accepts that layer's absence.
 */
import { expect, test } from "bun:test";
import { checkManifest } from "../../src/protocol/manifest.ts";
import { sandboxPathProblem, type SandboxPolicy } from "../../src/protocol/sandbox.ts";
import { policyOf, sandboxedCommand } from "../../src/sandbox/command.ts";
import { type KernelOffer, planSandbox } from "../../src/sandbox/plan.ts";
import { dirname } from "node:path";
import { launchWords } from "../../src/sandbox/launch-plan.ts";
import { checkoutRoot, runtimeFiles } from "../../src/sandbox/runtime-files.ts";
import { nativeLauncher } from "../../src/sandbox/native-launcher.ts";
import { intersect, narrowerOrEqual, within } from "../../src/sandbox/intersect.ts";
import { CxError } from "../../src/errors.ts";

const FULL: KernelOffer = { landlockAbi: 7, seccomp: true, root: true, pidsBase: "/sys/fs/cgroup/pids/cxagent" };
const policy = (over: Partial<SandboxPolicy> = {}): SandboxPolicy => ({ plugin: "p", read: [], write: [], net: "none", tmpBase: "/run/x", accepts: [], ...over });

test("sandbox paths: absolute or a known placeholder first; no .., no placeholder inside", () => {
  for (const ok of ["/etc/ssl/certs", "${project}", "${project}/out/report.md", "${plugin}", "${cache}/db", "${tmp}"]) expect(sandboxPathProblem(ok)).toBeNull();
  expect(sandboxPathProblem("relative/path")).toContain("neither absolute nor begins with a placeholder");
  expect(sandboxPathProblem("${home}/x")).toContain("not a placeholder");
  expect(sandboxPathProblem("${project}/../x")).toContain('contains ".."');
  expect(sandboxPathProblem("/a/../b")).toContain('contains ".."');
  expect(sandboxPathProblem("${project}x")).toContain('after the placeholder comes nothing or "/"');
  expect(sandboxPathProblem("/a/${project}")).toContain("a placeholder may only begin a path");
});

test("the manifest's sandbox is checked with the rest of the manifest, every problem named", () => {
  const base = { pluginContract: 4, name: "p", version: "1", tools: [] };
  const ok = checkManifest({ ...base, sandbox: { fs: { read: ["${project}"] }, net: { connect: [{ port: 443 }] }, processes: 8, memoryMiB: 512, openFiles: 256 } });
  expect(ok.ok).toBe(true);
  const defaults = checkManifest({ ...base, sandbox: {} });
  expect(defaults.ok && defaults.manifest.sandbox).toEqual({ fs: { read: [], write: [] }, net: "none" });
  const bad = checkManifest({ ...base, sandbox: { net: "some", processes: 0, fs: { write: ["out"] }, cpu: 1 } });
  expect(bad.ok).toBe(false);
  const text = bad.ok ? "" : bad.problems.map((p) => p.message).join("\n");
  expect(text).toContain('must be "none", "any" or');
  expect(text).toContain("processes must be at least 1");
  expect(text).toContain("neither absolute nor begins with a placeholder");
});

test("placeholders resolve; the plugin's own folder is readable and never writable", () => {
  const p = policyOf({ fs: { read: ["${project}/src"], write: ["${cache}", "${plugin}/x", "${tmp}/a"] }, net: "none" }, { plugin: "p", project: "/work", folder: "/plugins/p", stateDir: "/state", tmpBase: "/run/x" });
  expect(p.read).toEqual(["/plugins/p", "/work/src"]);
  expect(p.write).toEqual(["/state/cache/p", "${tmp}/a"]);
});

test("the plan on a full kernel has every layer; on a lesser one, each missing layer is named", () => {
  expect(planSandbox(policy({ processes: 8 }), FULL)).toMatchObject({ layers: ["no_new_privs", "netns", "landlock", "landlock-net", "seccomp", "rlimits", "pids"], missing: [] });
  expect(planSandbox(policy(), { ...FULL, landlockAbi: 0 }).missing.map((m) => m.layer)).toEqual(["landlock"]);
  expect(planSandbox(policy({ net: { connect: [{ port: 443 }], bind: [] } }), { ...FULL, landlockAbi: 3 }).missing.map((m) => m.layer)).toEqual(["landlock-net"]);
  // "none" on ABI 3 still holds: seccomp refuses every socket but AF_UNIX.
  expect(planSandbox(policy(), { ...FULL, landlockAbi: 3 }).missing).toEqual([]);
  expect(planSandbox(policy(), { ...FULL, seccomp: false }).missing.map((m) => m.layer)).toEqual(["seccomp"]);
  expect(planSandbox(policy({ processes: 8 }), { ...FULL, pidsBase: null }).missing.map((m) => m.layer)).toEqual(["pids"]);
  expect(planSandbox(policy({ net: "any" }), FULL).layers).not.toContain("landlock-net");
});

test("a layer the kernel lacks refuses the load with E_SANDBOX naming it, unless the user accepts its absence", () => {
  const lesser = { ...FULL, landlockAbi: 0 };
  let error: unknown;
  try {
    sandboxedCommand(["/usr/bin/bun", "main.ts", "__host"], policy(), lesser);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(CxError);
  expect((error as CxError).code).toBe("E_SANDBOX");
  expect((error as CxError).message).toContain("the landlock layer");
  expect((error as CxError).hint).toContain('"sandboxAccepts"');
  const accepted = sandboxedCommand(["/usr/bin/bun", "main.ts", "__host"], policy({ accepts: ["landlock"] }), lesser);
  expect(accepted.layers).not.toContain("landlock");
  expect(accepted.command.slice(-3)).toEqual(["/usr/bin/bun", "main.ts", "__host"]);
  // The native launcher is handed the plan's words, which leave Landlock out.
  expect(accepted.command[0]).toBe(nativeLauncher("/run/x")!);
  expect(accepted.command).not.toContain("landlock");
  expect(accepted.command).toContain("seccomp");
  expect(accepted.command.at(-4)).toBe("--");
  // Without it, `cxagent __sandbox` works the plan out again.
  process.env.CXAGENT_SANDBOX_LAUNCHER = "bun";
  try {
    expect(sandboxedCommand(["/usr/bin/bun", "main.ts", "__host"], policy({ accepts: ["landlock"] }), lesser).command.slice(0, 3)).toEqual(["/usr/bin/bun", "main.ts", "__sandbox"]);
  } finally {
    delete process.env.CXAGENT_SANDBOX_LAUNCHER;
  }
});

test("intersection only narrows: paths within the other side's, the smaller network, the lower limits", () => {
  const own = { fs: { read: ["${project}"], write: ["${project}/out", "/var/cache/x"] }, net: { connect: [{ port: 443 }, { port: 80 }], bind: [] }, processes: 8 };
  const floor = { fs: { read: ["${project}/src"], write: ["${project}"] }, net: { connect: [{ port: 443 }], bind: [{ port: 9 }] }, memoryMiB: 512 };
  const both = intersect(own, floor);
  expect(both).toEqual({ fs: { read: ["${project}/src", "${project}"], write: ["${project}/out"] }, net: { connect: [{ port: 443 }], bind: [] }, processes: 8, memoryMiB: 512 });
  expect(intersect(own, { fs: { read: [], write: [] }, net: "any" }).net).toEqual(own.net);
  expect(intersect(own, { fs: { read: [], write: [] }, net: "none" })).toMatchObject({ fs: { read: [], write: [] }, net: "none" });
  // "${project}x" is not within "${project}": folder by folder, not by prefix.
  expect(within("${project}x/a", "${project}")).toBe(false);
  expect(within("${project}/a", "${project}")).toBe(true);
  expect(narrowerOrEqual(both, own)).toBe(true);
  expect(narrowerOrEqual(own, both)).toBe(false);
  expect(narrowerOrEqual({ fs: { read: [], write: [] }, net: "none" }, { fs: { read: [], write: [] }, net: "none", memoryMiB: 64 })).toBe(false);
});

test("another kind's process starts through the same launcher: its command after the policy, an absolute path first", () => {
  const wrapped = sandboxedCommand(["/usr/bin/wc", "-l"], policy(), FULL, ["/opt/cxagent"]);
  expect(wrapped.command.slice(-3)).toEqual(["--", "/usr/bin/wc", "-l"]);
  expect(wrapped.commandFor(["-c"]).slice(-4)).toEqual(["--", "/usr/bin/wc", "-l", "-c"]);
  process.env.CXAGENT_SANDBOX_LAUNCHER = "bun";
  try {
    expect(sandboxedCommand(["/usr/bin/wc", "-l"], policy(), FULL, ["/opt/cxagent"]).command).toEqual(["/opt/cxagent", "__sandbox", JSON.stringify(policy()), "/usr/bin/wc", "-l"]);
  } finally {
    delete process.env.CXAGENT_SANDBOX_LAUNCHER;
  }
  expect(() => sandboxedCommand(["wc", "-l"], policy(), FULL, ["/opt/cxagent"])).toThrow("its path must be absolute");
  expect(() => sandboxedCommand(["/usr/bin/wc"], policy(), FULL)).toThrow("no cxagent command to run the launcher was given");
});

test("the launcher's plan grants what the host's own arguments name: a module's snapshot folder (write), its Workers' folders (read); the pids cap counts its pool", () => {
  const offer = { ...FULL, pidsBase: "/sys/fs/cgroup/pids/cxagent" };
  const p = policy({ processes: 8, read: ["/data"], write: ["${tmp}/out"], net: { connect: [{ port: 443 }], bind: [] }, memoryMiB: 64, openFiles: 32 });
  const host = ["/usr/bin/bun", "main.ts", "__host", "/p/lib.ts", "--kind", "module", "--snapshot", "/snap", "--worker-folder", "/workers", "--pool-cap", "3"];
  const words = launchWords(p, planSandbox(p, offer), host);
  const after = (word: string, n: number) => words.flatMap((w, i) => (w === word ? [words.slice(i + 1, i + 1 + n)] : []));
  const rights = new Map(after("path", 2).map(([r, path]) => [path!, BigInt(r!)]));
  const READ_FILE = 4n, WRITE_FILE = 2n, EXECUTE = 1n;
  expect(words.slice(0, 2)).toEqual(["tmp", "/run/x"]);
  expect(after("cgroup", 2)).toEqual([["/sys/fs/cgroup/pids/cxagent", String(8 + 24 + 3)]]);
  expect(rights.get("/snap")! & WRITE_FILE).toBe(WRITE_FILE);
  expect(rights.get("/workers")! & (READ_FILE | WRITE_FILE)).toBe(READ_FILE);
  expect(rights.get("/data")! & (READ_FILE | WRITE_FILE | EXECUTE)).toBe(READ_FILE);
  expect(rights.get("${tmp}/out")! & WRITE_FILE).toBe(WRITE_FILE);
  expect(rights.get("${tmp}")! & WRITE_FILE).toBe(WRITE_FILE);
  expect(after("port", 2)).toEqual([["2", "443"]]); // CONNECT_TCP to 443, and no bind
  expect(words).not.toContain("netns"); // only for net "none"
  expect(words).toContain("restrict");
  expect(after("rlimit", 3)).toEqual([["4", "0", "CORE"], ["9", String((64 + 512) * 2 ** 20), "AS"], ["7", "32", "NOFILE"]]);
  expect(after("env", 1).flat()).toContain("BUN_JSC_jitMemoryReservationSize=67108864");
  // The order the launcher carries them out: the cgroup before no_new_privs, Landlock, then seccomp, the limits last.
  const order = ["cgroup", "nnp", "landlock", "restrict", "seccomp", "rlimit"].map((w) => words.indexOf(w));
  expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
});

test("the plan grants no path but the runtime's, the declared ones and ${tmp}; the runtime is the host command's own; no more environment or filter than the plan needs", () => {
  const p = policy({ read: ["/data"], execute: ["/tools/run"], net: "any" });
  const pathsOf = (words: string[]) => new Map(words.flatMap((w, i) => (w === "path" ? [[words[i + 2]!, BigInt(words[i + 1]!)] as const] : [])));
  const envOf = (words: string[]) => words.flatMap((w, i) => (w === "env" ? [words[i + 1]!] : []));
  const host = ["/opt/runtime/bun", "main.ts", "__host", "/p/lib.so"];
  const words = launchWords(p, planSandbox(p, { ...FULL, seccomp: false }), host);
  const paths = pathsOf(words);
  const runtime = runtimeFiles("/opt/runtime/bun", checkoutRoot());
  const expected = new Set([...runtime.execute, ...runtime.read, ...runtime.list, ...runtime.device, "/data", "/tools/run", "${tmp}"]);
  expect([...paths.keys()].filter((path) => !expected.has(path))).toEqual([]);
  expect(paths.get("/opt/runtime")! & 1n).toBe(1n); // EXECUTE: the folder of the host command's runtime
  expect(paths.get("/tools/run")! & 1n).toBe(1n);
  // Declaring nothing: the runtime's paths and ${tmp} only.
  const bare = pathsOf(launchWords(policy(), planSandbox(policy(), FULL), host));
  const runtimeOnly = new Set([...runtime.execute, ...runtime.read, ...runtime.list, ...runtime.device, "${tmp}"]);
  expect([...bare.keys()].filter((path) => !runtimeOnly.has(path))).toEqual([]);
  // A host command that is not an absolute path runs as this runtime.
  const relative = pathsOf(launchWords(p, planSandbox(p, FULL), ["bun", "main.ts", "__host"]));
  expect(relative.has(".")).toBe(false);
  expect(relative.has(dirname(process.execPath))).toBe(true);
  // Seccomp accepted missing: no filter word; no memory limit: no JIT setting; no transpiler cache where its folder cannot be made.
  expect(words).not.toContain("seccomp");
  expect(envOf(words)).toEqual([`CXAGENT_SANDBOX=${planSandbox(p, { ...FULL, seccomp: false }).layers.join("+")}`]);
  expect(envOf(words)[0]).toContain("no_new_privs+");
});
