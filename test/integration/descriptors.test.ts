/**
 * Plugins cannot reach each other's or the parent's descriptors (SPEC §8): the parent and every
 * plugin host are non-dumpable, and a plugin host has given up CAP_SYS_PTRACE before it loads the
 * plugin, so pidfd_getfd and /proc/<pid>/fd/N fail for plugin code, and a request cannot be
 * written into another plugin past its gate. Nothing of ours is inherited by a process a plugin
 * starts.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { fixture, FIXTURES, openSession, ROOT, tempDir, until } from "../helpers.ts";
import { asNobody, NOBODY } from "../isolation.ts";

const EPERM = 1;
const EACCES = 13;

interface Reach {
  parent: number;
  reached: Record<"pidfdParent" | "pidfdSibling" | "procParent" | "procSibling", { got: number; errno: number }> & { parent: number };
  gatedToolRan: boolean;
}

function expectNothingReached(report: Reach) {
  expect(report.reached.parent).toBe(report.parent); // it aimed at the right process
  expect(report.reached.pidfdParent).toEqual({ got: 0, errno: EPERM });
  expect(report.reached.pidfdSibling).toEqual({ got: 0, errno: EPERM });
  expect(report.reached.procParent).toEqual({ got: 0, errno: EACCES });
  expect(report.reached.procSibling).toEqual({ got: 0, errno: EACCES });
  expect(report.gatedToolRan).toBe(false);
}

describe("a plugin reaching for the descriptors of the parent and of another plugin's host", () => {
  test("as root: pidfd_getfd and /proc/<pid>/fd/N both fail, and the other plugin's gated tool never runs", async () => {
    using dir = tempDir();
    const proc = Bun.spawn([process.execPath, join(ROOT, "test/fixtures/reach-session.ts"), FIXTURES, join(dir.path, "marker")], {
      cwd: ROOT,
      env: { ...process.env, CXAGENT_STATE_DIR: join(dir.path, "state"), CXAGENT_CONFIG_DIR: join(dir.path, "config") },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expectNothingReached(JSON.parse(stdout));
    expect(existsSync(join(dir.path, "marker"))).toBe(false);
  });

  test.skipIf(!NOBODY)("as an ordinary user: the same", async () => {
    using dir = tempDir();
    chmodSync(dir.path, 0o777);
    const r = await asNobody([process.execPath, join(ROOT, "test/fixtures/reach-session.ts"), FIXTURES, join(dir.path, "marker")], {
      CXAGENT_STATE_DIR: join(dir.path, "state"),
      CXAGENT_CONFIG_DIR: join(dir.path, "config"),
    });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expectNothingReached(JSON.parse(r.stdout));
    expect(existsSync(join(dir.path, "marker"))).toBe(false);
  });
});

describe("what a process a plugin starts inherits", () => {
  test("only stdin (/dev/null) and stdout and stderr (the plugin host's stderr); every other descriptor of the host is close-on-exec", async () => {
    using dir = tempDir();
    await using session = await openSession({ stateDir: join(dir.path, "state") });
    const plugin = await session.load(fixture("spawns-children"), { settings: { count: 1 } });
    const [child] = (await plugin.invoke("pids")).output.pids as number[];
    const host = plugin.pid!;
    // Right after its exec, the child's loader briefly holds the libraries it maps open: wait for
    // it to settle; a descriptor inherited from the host would stay.
    await until(() => readdirSync(`/proc/${child}/fd`).length <= 3, 5000, "the child's loader to close what it maps").catch(() => {});
    expect(readdirSync(`/proc/${child}/fd`).sort()).toEqual(["0", "1", "2"]);
    expect(readlinkSync(`/proc/${child}/fd/0`)).toBe("/dev/null");
    expect(readlinkSync(`/proc/${child}/fd/1`)).toBe(readlinkSync(`/proc/${host}/fd/2`));
    expect(readlinkSync(`/proc/${child}/fd/2`)).toBe(readlinkSync(`/proc/${host}/fd/2`));
    const O_CLOEXEC = 0o2000000;
    const open = readdirSync(`/proc/${host}/fd`).map(Number).filter((fd) => fd > 2);
    expect(open.length).toBeGreaterThan(1); // the protocol's two descriptors at least
    for (const fd of open) {
      const flags = /^flags:\s*([0-7]+)$/m.exec(await Bun.file(`/proc/${host}/fdinfo/${fd}`).text())?.[1];
      expect({ fd, cloexec: (parseInt(flags!, 8) & O_CLOEXEC) !== 0 }).toEqual({ fd, cloexec: true });
    }
  });
});
