/**
 * Libraries a plugin needs (DT_NEEDED): every one the loader maps from the plugin's folder comes
 * from the approved bytes, `$ORIGIN` works, and one that would come from a folder outside — not
 * a system one — is refused before any process exists (SPEC §6.3). Real ELF fixtures from
 * test/fixtures/deps/, real plugin hosts, constructor markers as proof of which bytes ran.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isCxError } from "../../src/errors.ts";
import { Session } from "../../src/index.ts";
import { trustRequestOf } from "../../src/session/inspect.ts";
import { describeTrustRequest } from "../../src/cli/_trust-prompt.ts";
import { cli, copyFixture, fixture, refusal, ROOT, tempDir } from "../helpers.ts";

function isolated(dir: string, env: Record<string, string> = {}, confirm: boolean | null = null) {
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "project"), { recursive: true });
  return Session.open({
    cwd: join(dir, "project"),
    configDir: join(dir, "config"),
    stateDir: join(dir, "state"),
    confirmTrust: confirm === null ? null : async () => confirm,
    env,
  });
}

const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").trim().split("\n") : []);

describe("a plugin that ships a library of its own", () => {
  test("the slugger example ships libslug.so and works", async () => {
    using dir = tempDir();
    await using session = await isolated(dir.path, {}, true);
    const slugger = await session.load(join(ROOT, "examples/slugger"));
    expect((await slugger.invoke("slugify", { text: "Hello, World! 2024" })).output).toEqual({ content: "hello-world-2024", library: "libslug 1.0" });
    const inspected = session.inspect(join(ROOT, "examples/slugger"));
    expect(inspected.dependencies.plan?.inSet).toEqual([{ path: "libslug.so", soname: "libslug.so" }]);
    // the person approving it is told what it ships
    expect(describeTrustRequest(trustRequestOf(inspected))).toContain("  ships         libslug.so (loaded from the approved copies)");
  });

  test("with RUNPATH $ORIGIN, the library beside it loads from its approved copy and works", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("with-dependency", dir.path);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    const loaded = await session.load(plugin);
    expect((await loaded.invoke("greet")).output.content).toBe("approved");
    // the library's constructor ran before the plugin's, as the loader orders them
    expect(lines(marker)).toEqual(["libgreeting approved", "plugin"]);
    // the plugin host mapped no file of the plugin's folder: both came from sealed copies
    const maps = readFileSync(`/proc/${loaded.pid}/maps`, "utf8").split("\n");
    expect(maps.filter((m) => m.includes(plugin))).toEqual([]);
    expect(maps.some((m) => m.includes("/memfd:cxagent:with-dependency:libgreeting.so"))).toBe(true);
    // and the trust prompt had said what it ships
    expect(session.inspect(plugin).dependencies.plan?.inSet).toEqual([{ path: "libgreeting.so", soname: "libgreeting.so" }]);
  });

  test("swapping that library during 50 loads never runs bytes that were not approved", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("with-dependency", dir.path);
    const approved = join(dir.path, "approved.so");
    copyFileSync(join(plugin, "libgreeting.so"), approved);
    {
      await using session = await isolated(dir.path, {}, true); // a person approves the plugin as built
      await session.load(plugin);
    }
    const swapper = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/swap-file.ts"), join(plugin, "libgreeting.so"), approved, join(fixture("greeting-swapped"), "libgreeting.so")], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const out = swapper.stdout.getReader();
    expect(new TextDecoder().decode((await out.read()).value)).toBe("swapping\n");
    let ran = 0;
    const refused = new Map<string, number>();
    try {
      await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }); // nobody to ask: only the approved load set loads
      for (let i = 0; i < 50; i++) {
        try {
          const loaded = await session.load(plugin);
          expect((await loaded.invoke("greet")).output.content).toBe("approved");
          await session.unload(loaded.name);
          ran++;
        } catch (error) {
          if (!isCxError(error)) throw error;
          refused.set(error.code, (refused.get(error.code) ?? 0) + 1);
        }
      }
    } finally {
      swapper.kill("SIGTERM");
    }
    const swaps = Number(new TextDecoder().decode((await out.read()).value).trim());
    await swapper.exited;
    expect(swaps).toBeGreaterThan(50);
    // every load either ran the approved bytes or was refused as changed (or torn mid-rewrite)
    expect([...refused.keys()].filter((code) => code !== "E_NOT_APPROVED" && code !== "E_LOAD")).toEqual([]);
    expect(ran).toBeGreaterThan(0);
    expect(ran + [...refused.values()].reduce((a, b) => a + b, 0)).toBe(50);
    const marks = lines(marker);
    expect(marks.filter((m) => m !== "plugin" && m !== "libgreeting approved")).toEqual([]);
    expect(marks.filter((m) => m === "libgreeting approved").length).toBe(ran);
    expect(marks.filter((m) => m === "plugin").length).toBe(ran);
  });

  test("an absolute RPATH to a folder outside its own: refused, naming it, before any constructor runs", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("outside-rpath", dir.path);
    const outside = join(fixture("outside-lib"), "libgreeting.so");
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    const error = await refusal(session.load(plugin));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toBe(
      `${join(plugin, "outside-rpath.so")} needs libgreeting.so, which the loader would load from ${outside}: outside the plugin's folder ${plugin} and not a system library, so it could change after you approve the plugin`,
    );
    expect(error.hint).toContain("-Wl,-rpath,'$ORIGIN'");
    expect(error.details).toEqual({ library: join(plugin, "outside-rpath.so"), dependency: "libgreeting.so", path: outside });
    expect(existsSync(marker)).toBe(false); // neither the plugin's constructor nor the library's ran
    expect(session.plugins).toEqual([]);
    // the CLI says the same with exit 5, and approving it is refused as well
    const env = { CXAGENT_CONFIG_DIR: join(dir.path, "config"), CXAGENT_STATE_DIR: join(dir.path, "state"), CXAGENT_FX_MARKER: marker };
    const r = await cli(["approve", plugin, "--hash", "0".repeat(64), "--json"], { env });
    expect(r.code).toBe(5);
    expect(r.json().error.message).toContain(`needs libgreeting.so, which the loader would load from ${outside}`);
    expect(existsSync(marker)).toBe(false);
  });

  test("a shipped library without the soname it is needed by is refused, saying how to link it", async () => {
    using dir = tempDir();
    const marker = join(dir.path, "marker");
    const plugin = copyFixture("dependency-without-soname", dir.path);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    const error = await refusal(session.load(plugin));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toContain("needs libgreeting.so, found in the plugin's folder as libgreeting.so, but that library has no DT_SONAME");
    expect(error.hint).toContain("link libgreeting.so with -Wl,-soname,libgreeting.so");
    expect(existsSync(marker)).toBe(false);
  });

  test("a library the plugin host has loaded already is matched by its soname, never searched for: an RPATH outside does not matter", async () => {
    using dir = tempDir();
    await using session = await isolated(dir.path, {}, true);
    const plugin = copyFixture("rpath-host-only", dir.path);
    expect(session.inspect(plugin).dependencies.plan?.system).toEqual([{ name: "libc.so.6", path: "(already loaded by the plugin host)" }]);
    expect((await (await session.load(plugin)).invoke("echo_this")).success).toBe(true);
  });

  test("system libraries stay allowed; an RPATH folder outside, searched before them, is refused even while empty", async () => {
    using dir = tempDir();
    {
      await using session = await isolated(dir.path, {}, true);
      const plugin = copyFixture("system-dependency", dir.path);
      expect(session.inspect(plugin).dependencies.plan?.system.map((s) => s.name)).toEqual(["libgcc_s.so.1", "libc.so.6"]);
      expect((await (await session.load(plugin)).invoke("echo_this")).success).toBe(true);
    }
    // a file put in that folder after approval would be loaded instead of the system's
    const marker = join(dir.path, "marker");
    const stale = copyFixture("stale-rpath", dir.path);
    await using session = await isolated(dir.path, { CXAGENT_FX_MARKER: marker }, true);
    const error = await refusal(session.load(stale));
    expect(error.code).toBe("E_LOAD");
    expect(error.message).toContain(`stale-rpath.so has the loader look for libgcc_s.so.1 in ${fixture("stale-rpath-folder")} (its DT_RPATH) before the system's folders`);
    expect(error.hint).toContain("relink stale-rpath.so with only '$ORIGIN' paths in its DT_RPATH");
  });
});
