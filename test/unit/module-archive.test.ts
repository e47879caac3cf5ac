/**
 * How a module plugin's approved files travel to its plugin host (protocol/module-archive.ts),
 * and the host's command line that says what kind of plugin it loads (protocol/host-args.ts).
 */
import { describe, expect, test } from "bun:test";
import { decodeArchive, encodeArchive } from "../../src/protocol/module-archive.ts";
import { hostArgv, readHostArgv } from "../../src/protocol/host-args.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("the module archive", () => {
  const archive = {
    folder: "/plugins/calc",
    entry: "calc.ts",
    files: new Map([
      ["calc.ts", bytes("export default {}")],
      ["calc.plugin.json", bytes("{}")],
      ["empty.txt", bytes("")],
      ["node_modules/é/index.js", bytes("module.exports = '☃'")],
    ]),
    links: new Map([["alias.ts", "calc.ts"]]),
  };

  test("holds every file's bytes, every link and the entry, exactly", () => {
    const decoded = decodeArchive(encodeArchive(archive));
    expect(decoded.folder).toBe(archive.folder);
    expect(decoded.entry).toBe(archive.entry);
    expect([...decoded.files.keys()]).toEqual([...archive.files.keys()]);
    for (const [path, content] of archive.files) expect(Buffer.from(decoded.files.get(path)!).equals(Buffer.from(content))).toBe(true);
    expect([...decoded.links]).toEqual([["alias.ts", "calc.ts"]]);
  });

  test("a cut, padded or foreign archive is refused, saying which", () => {
    const whole = encodeArchive(archive);
    expect(() => decodeArchive(whole.subarray(0, whole.length - 1))).toThrow("cut short in node_modules/é/index.js");
    expect(() => decodeArchive(new Uint8Array([...whole, 0]))).toThrow("bytes after its last file");
    expect(() => decodeArchive(bytes("PK\u0003\u0004 not ours"))).toThrow("does not start with CXMODULE1");
    expect(() => decodeArchive(whole.subarray(0, 20))).toThrow("header is cut short");
    const noEntry = encodeArchive({ ...archive, entry: "missing.ts" });
    expect(() => decodeArchive(noEntry)).toThrow("does not hold its entry module missing.ts");
  });
});

describe("the plugin host's kind", () => {
  const base = { library: "/p/x.ts", sessionId: null, libraryFd: 3, dependencies: [], parentPid: 42, poolCap: 16, pollMs: 200, spinUs: null };

  test("native is the default and is not written; module travels with its snapshot folder", () => {
    expect(hostArgv({ ...base, kind: "native", snapshot: null })).not.toContain("--kind");
    const argv = hostArgv({ ...base, kind: "module", snapshot: "/tmp/cxagent-module-1.2-abc" });
    expect(argv.slice(-4)).toEqual(["--kind", "module", "--snapshot", "/tmp/cxagent-module-1.2-abc"]);
    expect(readHostArgv(argv)).toEqual({ ...base, kind: "module", snapshot: "/tmp/cxagent-module-1.2-abc" });
    expect(readHostArgv(["/p/x.so"])).toMatchObject({ kind: "native", snapshot: null });
  });

  test("a Cortex process plugin's call sandbox travels as one JSON argument, and only when there is one", () => {
    const callSandbox = JSON.stringify({ launcher: ["/usr/bin/cxagent"], policy: { plugin: "p", read: ["/a b"], write: [], net: "none", tmpBase: "/run/x", accepts: [] } });
    const argv = hostArgv({ ...base, kind: "cortex-process", snapshot: "/run/s", callSandbox });
    expect(argv.slice(-2)).toEqual(["--call-sandbox", callSandbox]);
    expect(readHostArgv(argv)).toEqual({ ...base, kind: "cortex-process", snapshot: "/run/s", callSandbox });
    expect(hostArgv({ ...base, kind: "cortex-process", snapshot: "/run/s" })).not.toContain("--call-sandbox");
    expect(readHostArgv(["/p/x", "--call-sandbox"])).toEqual({ error: "--call-sandbox needs a value" });
  });

  test("an unknown kind is an error naming the ones there are", () => {
    expect(readHostArgv(["/p/x", "--kind", "python"])).toEqual({ error: "--kind takes native, cortex, module or cortex-process, not 'python'" });
  });
});
