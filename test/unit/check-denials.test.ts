/**
 * Naming denied accesses from a trace (issue 39 point 5): each file or network call that failed
 * with EACCES or EPERM becomes the sidecar line that would allow it, paths in the project named
 * by ${project}; other failures, Unix sockets and repeats are left out.
 */
import { expect, test } from "bun:test";
import { denialsOf, denialWords, sandboxPath } from "../../src/check/denials.ts";

const places = { project: "/work/p", cache: "/state/cache/x", cwd: "/work/p" };

test("reads, writes, connects, binds and sockets, each with its line; ENOENT, Unix sockets, the runtime's /proc and /sys and repeats are not denials", () => {
  const trace = [
    '101 openat(AT_FDCWD, "/etc/hostname", O_RDONLY) = -1 EACCES (Permission denied)',
    '101 openat(AT_FDCWD, "/etc/hostname", O_RDONLY) = -1 EACCES (Permission denied)',
    '102 openat(AT_FDCWD, "out/report.md", O_WRONLY|O_CREAT|O_TRUNC, 0644) = -1 EACCES (Permission denied)',
    '103 mkdir("/state/cache/x/db", 0700) = -1 EACCES (Permission denied)',
    '104 connect(5, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.2.3.4")}, 16) = -1 EACCES (Permission denied)',
    '104 bind(5, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0)}, 28) = -1 EACCES (Permission denied)',
    "105 socket(AF_INET, SOCK_STREAM, IPPROTO_IP) = -1 EPERM (Operation not permitted)",
    '106 connect(6, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) = -1 EACCES (Permission denied)',
    '107 openat(AT_FDCWD, "/nope", O_RDONLY) = -1 ENOENT (No such file or directory)',
    '108 openat(AT_FDCWD, "/proc/thread-self/comm", O_RDWR) = -1 EACCES (Permission denied)',
    '108 openat(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY) = -1 EACCES (Permission denied)',
  ].join("\n");
  const denials = denialsOf(trace, places);
  expect(denials.map(denialWords)).toEqual([
    'read of /etc/hostname was denied (EACCES); "sandbox": {"fs": {"read": ["/etc/hostname"]}} would allow it',
    'write of /work/p/out/report.md was denied (EACCES); "sandbox": {"fs": {"write": ["${project}/out/report.md"]}} would allow it',
    'write of /state/cache/x/db was denied (EACCES); "sandbox": {"fs": {"write": ["${cache}/db"]}} would allow it',
    'connect to TCP port 443 was denied (EACCES); "sandbox": {"net": {"connect": [{"port": 443}]}} would allow it',
    'bind to TCP port 8080 was denied (EACCES); "sandbox": {"net": {"bind": [{"port": 8080}]}} would allow it',
    'an AF_INET socket was denied (EPERM); "sandbox": {"net": {"connect": [{"port": N}]}} (N: the port it connects to) or {"net": "any"} would allow it',
  ]);
});

test("a path is named by its placeholder only inside that folder, never by a prefix of a name", () => {
  expect(sandboxPath("/work/p", places)).toBe("${project}");
  expect(sandboxPath("/work/p/a/b", places)).toBe("${project}/a/b");
  expect(sandboxPath("/work/pp/a", places)).toBe("/work/pp/a");
});

test("Landlock's audit is probed, never turned on: below ABI 7 it is off for that reason; on this kernel it answers on or off with why", async () => {
  const { landlockAudit } = await import("../../src/sandbox/audit.ts");
  const { landlockAbi } = await import("../../src/sandbox/kernel.ts");
  expect(landlockAudit(6)).toEqual({ on: false, why: "Landlock logs denials from ABI 7 (Linux 6.15); this kernel offers ABI 6" });
  const here = landlockAudit(landlockAbi());
  // The status is read, not guessed: never "could not be read" on a kernel that answers it.
  expect(here.on || !here.why.includes("could not be read")).toBe(true);
});
