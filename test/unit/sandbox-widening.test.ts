/**
 * What in a sandbox that may only narrow (a project's entry, a gate's lease) would widen the one
 * it narrows (src/sandbox/widening.ts): each entry by its path in the sandbox, with words naming
 * what is allowed instead.
 */
import { expect, test } from "bun:test";
import * as v from "valibot";
import { SandboxSchema } from "../../src/protocol/sandbox.ts";
import { wideningsOf } from "../../src/sandbox/widening.ts";

const sb = (x: object) => v.parse(SandboxSchema, x);
const wide = sb({ fs: { read: ["${project}/src", "/etc/ssl"], write: ["${project}/out"] }, net: { connect: [{ port: 443 }, { port: 80 }], bind: [{ port: 8080 }] }, processes: 8, memoryMiB: 256, openFiles: 64 });

test("nothing narrower widens, limits equal to the allowed ones included; an unconfined side allows anything", () => {
  const narrow = sb({ fs: { read: ["${project}/src/lib", "/etc/ssl", "${project}/out/log"], write: ["${project}/out/report.md"] }, net: { connect: [{ port: 80 }], bind: [{ port: 8080 }] }, processes: 8, memoryMiB: 128 });
  expect(wideningsOf(narrow, wide)).toEqual([]);
  expect(wideningsOf(sb({ fs: { read: ["/"], write: ["/"] }, net: "any", memoryMiB: 1 << 20 }), null)).toEqual([]);
  expect(wideningsOf(sb({ net: "none" }), wide)).toEqual([]);
  expect(wideningsOf(sb({ net: { connect: [{ port: 1 }] } }), sb({ net: "any" }))).toEqual([]);
});

test("each widening entry by its path, naming what is allowed", () => {
  const narrow = sb({ fs: { read: ["/etc/ssl", "/home"], write: ["${project}/out", "${project}"] }, net: { connect: [{ port: 443 }, { port: 22 }], bind: [{ port: 9090 }] }, processes: 9, memoryMiB: 256, openFiles: 65 });
  expect(wideningsOf(narrow, wide)).toEqual([
    { at: "fs.read[1]", message: '"/home" lies outside what may be read ("${project}/src", "/etc/ssl", "${project}/out")' },
    { at: "fs.write[1]", message: '"${project}" lies outside what may be written ("${project}/out")' },
    { at: "net.connect[1]", message: "port 22 is not among the ports allowed to connect (443, 80)" },
    { at: "net.bind[0]", message: "port 9090 is not among the ports allowed to bind (8080)" },
    { at: "processes", message: "9 is higher than the 8 allowed" },
    { at: "openFiles", message: "65 is higher than the 64 allowed" },
  ]);
});

test("the network: any over ports, ports over none, each said with both sides; nothing allowed is said as nothing or none", () => {
  expect(wideningsOf(sb({ net: "any" }), wide)).toEqual([{ at: "net", message: `"any" is wider than the TCP ports {"connect":[{"port":443},{"port":80}],"bind":[{"port":8080}]} allowed` }]);
  expect(wideningsOf(sb({ net: { connect: [{ port: 443 }] } }), sb({ net: "none" }))).toEqual([{ at: "net", message: `TCP ports {"connect":[{"port":443}],"bind":[]} is wider than the "none" allowed` }]);
  expect(wideningsOf(sb({ fs: { read: ["/x"], write: ["/y"] }, net: { bind: [{ port: 1 }] } }), sb({ net: { connect: [{ port: 2 }] } }))).toEqual([
    { at: "fs.read[0]", message: '"/x" lies outside what may be read (nothing)' },
    { at: "fs.write[0]", message: '"/y" lies outside what may be written (nothing)' },
    { at: "net.bind[0]", message: "port 1 is not among the ports allowed to bind (none)" },
  ]);
  expect(wideningsOf(sb({ fs: { write: ["/z"] } }), sb({ fs: { write: ["/a", "/b"] } }))).toEqual([{ at: "fs.write[0]", message: '"/z" lies outside what may be written ("/a", "/b")' }]);
});
