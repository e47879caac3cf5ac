/** Resolving a secret's binding (issue 40), in the cxagent process: real files, real commands, the environment; every refusal's words. */
import { expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { MAX_SECRET_BYTES, MIN_SECRET_BYTES, resolveBinding } from "../../src/secrets/resolve.ts";
import { tempDir } from "../helpers.ts";

const text = (r: Awaited<ReturnType<typeof resolveBinding>>) => (r.ok ? { value: Buffer.from(r.value).toString("latin1") } : { message: r.message });

test("a file: its bytes, less one trailing newline (LF or CRLF); ~ is the home folder", async () => {
  using dir = tempDir();
  const write = (name: string, content: string | Buffer) => {
    const path = join(dir.path, name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };
  expect(text(await resolveBinding({ file: write("lf", "token-1234\n") }))).toEqual({ value: "token-1234" });
  expect(text(await resolveBinding({ file: write("crlf", "token-1234\r\n") }))).toEqual({ value: "token-1234" });
  expect(text(await resolveBinding({ file: write("two", "token-1234\n\n") }))).toEqual({ value: "token-1234\n" });
  expect(text(await resolveBinding({ file: write("cr", "token-1234\r") }))).toEqual({ value: "token-1234" });
  expect(text(await resolveBinding({ file: write("bare", "token-1234") }))).toEqual({ value: "token-1234" });
  mkdirSync(join(dir.path, "home"));
  writeFileSync(join(dir.path, "home", "t"), "home-token\n", { mode: 0o600 });
  expect(text(await resolveBinding({ file: "~/t" }, { HOME: join(dir.path, "home") }))).toEqual({ value: "home-token" });
  // The largest value taken, and one byte more.
  const most = "x".repeat(MAX_SECRET_BYTES);
  expect(text(await resolveBinding({ file: write("most", most + "\r\n") }))).toEqual({ value: most });
  expect(text(await resolveBinding({ file: write("more", most + "y") }))).toEqual({ message: `its value is over ${MAX_SECRET_BYTES} bytes` });
  const huge = write("huge", most + "yyy");
  expect(text(await resolveBinding({ file: huge }))).toEqual({ message: `the file ${huge} is over ${MAX_SECRET_BYTES} bytes` });
});

test("a file is refused when others may read it, when it is not yours, not a regular file, or missing; never waiting on a FIFO", async () => {
  using dir = tempDir();
  const loose = join(dir.path, "loose");
  writeFileSync(loose, "token-1234");
  for (const mode of [0o640, 0o604, 0o610, 0o601]) {
    chmodSync(loose, mode);
    const shown = mode.toString(8).padStart(4, "0");
    expect(text(await resolveBinding({ file: loose }))).toEqual({ message: `the file ${loose} has mode ${shown}: others may read or change it; run chmod 600 ${loose}` });
  }
  const theirs = join(dir.path, "theirs");
  writeFileSync(theirs, "token-1234", { mode: 0o600 });
  chownSync(theirs, 4321, 4321);
  expect(text(await resolveBinding({ file: theirs }))).toEqual({ message: `the file ${theirs} belongs to uid 4321, not to you (uid ${process.getuid!()})` });
  const folder = join(dir.path, "folder");
  mkdirSync(folder, { mode: 0o700 });
  expect(text(await resolveBinding({ file: folder }))).toEqual({ message: `${folder} is not a regular file` });
  const fifo = join(dir.path, "fifo");
  execFileSync("mkfifo", ["-m", "600", fifo]);
  expect(text(await resolveBinding({ file: fifo }))).toEqual({ message: `${fifo} is not a regular file` });
  const missing = join(dir.path, "missing");
  expect(text(await resolveBinding({ file: missing }))).toEqual({ message: `the file ${missing} cannot be read (ENOENT)` });
});

test("a value shorter than 8 bytes is refused at use, with its length", async () => {
  using dir = tempDir();
  for (const [value, words] of [["1234567", "7 bytes"], ["1", "1 byte"], ["", "0 bytes"]] as const) {
    const path = join(dir.path, `v${value.length}`);
    writeFileSync(path, `${value}\n`, { mode: 0o600 });
    expect(text(await resolveBinding({ file: path }))).toEqual({ message: `its value is ${words} long, shorter than the ${MIN_SECRET_BYTES} a secret must have (redacting a shorter one would hide ordinary words)` });
  }
  writeFileSync(join(dir.path, "eight"), "12345678", { mode: 0o600 });
  expect(text(await resolveBinding({ file: join(dir.path, "eight") }))).toEqual({ value: "12345678" });
});

test("a command: run without a shell in the environment given, its stdout the value; a failure names the command and why", async () => {
  expect(text(await resolveBinding({ command: ["printf", "%s\\n", "cmd-token-1"] }))).toEqual({ value: "cmd-token-1" });
  // Arguments reach it as they are: no shell to expand them.
  expect(text(await resolveBinding({ command: ["printf", "%s", "$HOME;*|x"] }))).toEqual({ value: "$HOME;*|x" });
  expect(text(await resolveBinding({ command: ["sh", "-c", 'printf %s "$GIVEN"'] }, { PATH: process.env.PATH, GIVEN: "from-the-env-given" }))).toEqual({ value: "from-the-env-given" });
  expect(text(await resolveBinding({ command: ["sh", "-c", "echo first line >&2; echo second >&2; exit 3"] }))).toEqual({ message: `command sh -c "echo first line >&2; echo second >&2; exit 3" exited with 3 (it said: first line)` });
  expect(text(await resolveBinding({ command: ["false"] }))).toEqual({ message: "command false exited with 1" });
  expect(text(await resolveBinding({ command: ["sh", "-c", "kill -TERM $$"] }))).toEqual({ message: `command sh -c "kill -TERM $$" exited with signal SIGTERM` });
  expect(text(await resolveBinding({ command: ["cxagent-no-such-program"] }))).toEqual({ message: "command cxagent-no-such-program failed: the program was not found" });
  // Found but not runnable: the error as it is, not "not found".
  const notRunnable = join(import.meta.dir, "secret-resolve.test.ts");
  const refused = text(await resolveBinding({ command: [notRunnable] })).message!;
  expect(refused).toStartWith(`command ${notRunnable} failed: `);
  expect(refused).not.toContain("the program was not found");
  expect(refused).toContain("EACCES");
  expect(text(await resolveBinding({ command: ["head", "-c", String(MAX_SECRET_BYTES + 3), "/dev/zero"] }))).toEqual({ message: `command head -c ${MAX_SECRET_BYTES + 3} /dev/zero failed: it wrote over ${MAX_SECRET_BYTES} bytes` });
  const most = await resolveBinding({ command: ["head", "-c", String(MAX_SECRET_BYTES + 2), "/dev/zero"] });
  expect(text(most)).toEqual({ message: `its value is over ${MAX_SECRET_BYTES} bytes` });
});

test("an environment variable of cxagent's own: its value, or that it is not set", async () => {
  expect(text(await resolveBinding({ env: "CX_T" }, { CX_T: "env-token-1\n" }))).toEqual({ value: "env-token-1" });
  expect(text(await resolveBinding({ env: "CX_T" }, {}))).toEqual({ message: "the environment variable CX_T is not set in cxagent's environment" });
});

test("a command's stdin is nothing (a program reading it ends at once); what it said is its first non-blank line, at most 200 characters", async () => {
  expect(text(await resolveBinding({ command: ["cat"] }))).toEqual({ message: "its value is 0 bytes long, shorter than the 8 a secret must have (redacting a shorter one would hide ordinary words)" });
  const long = "w".repeat(300);
  const said = text(await resolveBinding({ command: ["sh", "-c", `printf '\\n  ${long}\\nnext' >&2; exit 2`] })).message!;
  expect(said).toEndWith(` exited with 2 (it said: ${"w".repeat(200)})`);
}, 20_000);

test("resolving leaves no file descriptor open, a file's or a command's", async () => {
  using dir = tempDir();
  const path = join(dir.path, "t");
  writeFileSync(path, "fd-token-1", { mode: 0o600 });
  const open = () => readdirSync("/proc/self/fd").length;
  await resolveBinding({ file: path });
  await resolveBinding({ command: ["printf", "cmd-token-1"] });
  const before = open();
  for (let i = 0; i < 20; i++) {
    await resolveBinding({ file: path });
    await resolveBinding({ file: join(dir.path, "missing") });
  }
  for (let i = 0; i < 5; i++) await resolveBinding({ command: ["printf", "cmd-token-1"] });
  // A spawn's pipes and pidfd are closed by the runtime when it gets to them, on a busy machine
  // after the call returned: wait for them. A descriptor this code failed to close never goes.
  const settled = Date.now() + 5_000;
  while (open() > before && Date.now() < settled) {
    Bun.gc(true);
    await Bun.sleep(50);
  }
  expect(open()).toBeLessThanOrEqual(before);
  const onFile = readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  });
  expect(onFile).toEqual([]);
});
