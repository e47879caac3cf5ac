/**
 * `cxagent check` under a plugin's sandbox (issue 39 point 5), as a user runs it: a plugin that
 * reads a path it did not declare has that read denied, and the check names the path and the
 * "fs.read" entry that would allow it where it can trace the host (strace); where it cannot (no
 * strace on PATH, Landlock's audit off), it names the call that met EACCES and what to install.
 */
import { expect, test } from "bun:test";
import { approve, cli, fixture } from "../helpers.ts";

const sandboxCheck = (r: { json(): { checks: { id: string; status: string; seen: string; fix: string | null }[] } }) => r.json().checks.find((c) => c.id === "sandbox")!;

test.if(Bun.which("strace") !== null)("with strace: the denied read is named with the sidecar line that allows it; exit 5", async () => {
  await approve(fixture("reads-undeclared"));
  const r = await cli(["check", fixture("reads-undeclared"), "--only", "start,sandbox", "--json"]);
  expect(r.code).toBe(5);
  expect(sandboxCheck(r)).toMatchObject({ status: "fail" });
  expect(sandboxCheck(r).seen).toContain('read of /etc/hostname was denied (EACCES); "sandbox": {"fs": {"read": ["/etc/hostname"]}} would allow it');
});

test("without a tracer: the call that met EACCES is named, and what to install to name the access", async () => {
  await approve(fixture("reads-undeclared"));
  const r = await cli(["check", fixture("reads-undeclared"), "--only", "start,sandbox", "--json"], { env: { PATH: "/nonexistent" } });
  expect(r.code).toBe(0);
  expect(sandboxCheck(r)).toMatchObject({ status: "warn", fix: expect.stringContaining("install strace") });
  expect(sandboxCheck(r).seen).toContain("1 call under the sandbox answered EACCES or EPERM: peek {}");
});
