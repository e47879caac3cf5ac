/**
 * plugin-host/process.ts's startProcess up to its ready line: each refusal the plugin host makes
 * before any tool runs, called in this process with the arguments a plugin host gets (a real
 * sealed-file descriptor of the approved files, a real 0700 snapshot folder) and `refuse` ending
 * the start as the real one does. The parent refuses most of these before a host exists
 * (the manifest.toml is read at inspection): the host checks them again on the bytes it was
 * handed. Started for real, through the parent, in cortex-process-host.test.ts.
 */
import { expect, test } from "bun:test";
import { chmodSync, fstatSync, mkdirSync, openSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startProcess } from "../../src/plugin-host/process.ts";
import type { HostStart, Refusal } from "../../src/plugin-host/start.ts";
import { encodeArchive } from "../../src/protocol/module-archive.ts";
import { describeProblems } from "../../src/protocol/manifest.ts";
import { readProcessManifest } from "../../src/protocol/cortex-process.ts";
import { tempDir } from "../helpers.ts";

class Refused extends Error {
  constructor(readonly reason: Refusal, message: string) {
    super(message);
  }
}

const HEAD = 'name = "host-case"\nversion = "1.0.0"\n[native]\nisolation = "process"\n';
const TOOL = '[[native.tools]]\nname = "a"\ndescription = "d"\ncommand = "run.sh"\n';
const enc = (text: string) => new TextEncoder().encode(text);

/** A start of the host with these approved files; what it refused, the phases it named and the descriptors it marked close-on-exec. */
async function start(dir: string, files: Record<string, string> | Uint8Array | null, settings: { snapshot?: string | null; callSandbox?: string } = {}) {
  let fd: number | null = null;
  if (files !== null) {
    const bytes = files instanceof Uint8Array ? files : encodeArchive({ folder: "/plugins/case", entry: "manifest.toml", files: new Map(Object.entries(files).map(([k, v]) => [k, enc(v)])), links: new Map() });
    writeFileSync(join(dir, "archive"), bytes);
    fd = openSync(join(dir, "archive"), "r");
  }
  const snapshot = settings.snapshot === undefined ? join(dir, "snapshot") : settings.snapshot;
  if (snapshot !== null && settings.snapshot === undefined) {
    mkdirSync(snapshot);
    chmodSync(snapshot, 0o700);
  }
  const phases: string[] = [];
  const closed: number[] = [];
  const host = {
    libc: { closeOnExec: (n: number) => closed.push(n) },
    shim: { writeText: () => {} },
    settings: { libraryFd: fd, snapshot, pollMs: 5, ...(settings.callSandbox === undefined ? {} : { callSandbox: settings.callSandbox }) },
    refuse: (reason: Refusal, error: string): never => {
      throw new Refused(reason, error);
    },
    phase: (name: string) => phases.push(name),
    protocolFd: 901,
    requestFd: 902,
  } as unknown as HostStart;
  try {
    await startProcess(host);
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    return { reason: error.reason, message: error.message, phases, closed, fd };
  }
  throw new Error("it was not refused");
}

/** Whether `fd` is still open in this process. */
const open = (fd: number) => {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
};

test("started without the approved files or the snapshot folder: refused before anything is read", async () => {
  using dir = tempDir();
  const words = "the plugin host was started without the plugin's approved files (--library-fd and --snapshot)";
  expect(await start(dir.path, null)).toMatchObject({ reason: "load", message: words, phases: [], closed: [] });
  const r = await start(dir.path, { "manifest.toml": HEAD + TOOL }, { snapshot: null });
  expect(r).toMatchObject({ reason: "load", message: words, phases: [], closed: [] });
});

test("approved files that are not an archive: refused naming why, and their descriptor closed", async () => {
  using dir = tempDir();
  const r = await start(dir.path, enc("not an archive"));
  expect(r.reason).toBe("load");
  expect(r.message).toStartWith("the plugin host could not read the plugin's approved files: ");
  expect(r.message.length).toBeGreaterThan("the plugin host could not read the plugin's approved files: ".length);
  expect(open(r.fd!)).toBe(false);
});

test("a manifest.toml with problems: each named, counted in words (1 problem, 2 problems); the protocol's descriptors marked close-on-exec first", async () => {
  using dir = tempDir();
  const two = HEAD + '[[native.tools]]\nname = "a"\n';
  const r = await start(dir.path, { "manifest.toml": two });
  const read = readProcessManifest(enc(two));
  if (read.ok) throw new Error("the fixture manifest was accepted");
  expect(r).toMatchObject({ reason: "manifest", message: `the manifest.toml has 2 problems:\n${describeProblems(read.problems)}`, closed: [901, 902], phases: [] });
  expect(open(r.fd!)).toBe(false); // closed once read, refused or not
  const oneText = HEAD + '[[native.tools]]\nname = 3\ndescription = "d"\ncommand = "x"\n';
  const one = readProcessManifest(enc(oneText));
  if (one.ok) throw new Error("the fixture manifest was accepted");
  using dir2 = tempDir();
  expect((await start(dir2.path, { "manifest.toml": oneText })).message).toBe(`the manifest.toml has 1 problem:\n${describeProblems(one.problems)}`);
});

test("a manifest.toml whose manifest breaks the manifest's own rules (one tool declared twice): refused", async () => {
  using dir = tempDir();
  const r = await start(dir.path, { "manifest.toml": HEAD + TOOL + TOOL, "run.sh": "" });
  expect(r).toMatchObject({ reason: "manifest", message: "the manifest made from manifest.toml has problems:\n  - tools[1]: tool 'a' is declared more than once (tool 'a')", phases: [] });
});

test("a snapshot folder that is not empty: refused naming it, after the snapshot phase is named", async () => {
  using dir = tempDir();
  const snapshot = join(dir.path, "used");
  mkdirSync(snapshot, { mode: 0o700 });
  writeFileSync(join(snapshot, "x"), "");
  const r = await start(dir.path, { "manifest.toml": HEAD + TOOL, "run.sh": "" }, { snapshot });
  expect(r).toMatchObject({ reason: "load", phases: ["snapshot"], message: `the plugin host could not prepare the plugin's approved files: the snapshot folder ${snapshot} is not an empty folder of this user's that only it can open` });
});

test("a command that is not among the approved files, written plainly or as ./x: refused naming the tool", async () => {
  for (const command of ["gone.sh", "./gone.sh", "sub/../run.sh"]) {
    using dir = tempDir();
    const r = await start(dir.path, { "manifest.toml": HEAD + TOOL.replace('"run.sh"', JSON.stringify(command)), "run.sh": "" });
    expect([command, r.reason, r.message]).toEqual([command, "manifest", `tool 'a' runs ${command}, which is not a file in the plugin's folder`]);
  }
});

test("a --call-sandbox that is not a launcher and a policy: refused, after each command of the folder was found and made executable in the snapshot", async () => {
  for (const command of ["./run.sh", ".//run.sh", "run.sh"]) {
    using dir = tempDir();
    const r = await start(dir.path, { "manifest.toml": HEAD + TOOL.replace('"run.sh"', JSON.stringify(command)), "run.sh": "" }, { callSandbox: "{}" });
    expect([command, r.reason, r.message, r.phases]).toEqual([command, "load", '--call-sandbox is not {"launcher": [...], "policy": {...}}', ["snapshot"]]);
    expect(statSync(join(dir.path, "snapshot", "plugin", "run.sh")).mode & 0o777).toBe(0o700);
  }
});
