/**
 * Large results stay bounded (issue 41), through the library: the delivery cap (off unless asked),
 * the spill to the result store, and references passed from one tool to the next byte for byte.
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { fixture, openSession, refusal, tempDir, within, writeModule } from "../helpers.ts";
import type { PermissionRequest } from "../../src/index.ts";

const KB = 1000;
const sha = (text: string) => createHash("sha256").update(text).digest("hex");
/** What big-reply.c answers for `tag` and `bytes`: letters from 'a' + tag, round the alphabet. */
const letters = (bytes: number, tag = 0) => Array.from({ length: bytes }, (_, i) => String.fromCharCode(97 + ((tag + i) % 26))).join("");

/** A TypeScript plugin whose tool answers the SHA-256 and length of the text it was given (gated: it asks). */
function hasher(dir: string): string {
  return writeModule(
    dir,
    "hasher",
    `import { createHash } from "node:crypto";
export default {
  start() {},
  stop() {},
  invoke(tool, args) {
    return { success: true, output: { content: createHash("sha256").update(args.text).digest("hex"), length: Buffer.byteLength(args.text) } };
  },
};`,
    { tools: [{ name: "hash_text", gated: true, inputSchema: { type: "object", properties: { text: { type: "string", minLength: 1000 } }, required: ["text"] } }] },
  );
}

test("the library delivers results whole unless a cap is asked for; over maxOutputBytes: head, a line, tail, and the whole stored by its hash", async () => {
  await using session = await openSession();
  const plugin = await session.load(fixture("big-reply"));
  const whole = await plugin.invoke("big_reply", { bytes: 300 * KB });
  expect(whole.output.content).toBe(letters(300 * KB));
  expect(whole.spilled).toBeUndefined();

  const capped = await plugin.invoke("big_reply", { bytes: 300 * KB, tag: 3 }, { maxOutputBytes: 100_000 });
  const full = letters(300 * KB, 3);
  expect(capped.spilled).toEqual({ truncated: true, bytes: 300 * KB, sha256: sha(full), ref: `cxref:sha256-${sha(full)}` });
  const content = capped.output.content as string;
  expect(Buffer.byteLength(content)).toBeLessThanOrEqual(100_000);
  expect(Buffer.byteLength(content)).toBeGreaterThan(99_000);
  const [head, line, tail] = content.split("\n");
  expect(full.startsWith(head!)).toBe(true);
  expect(full.endsWith(tail!)).toBe(true);
  expect(line).toBe(`[… ${300 * KB - head!.length - tail!.length} of ${300 * KB} bytes left out. The whole result is ${capped.spilled!.ref} (SHA-256 ${sha(full)}); read the rest with \`cxagent result ${capped.spilled!.ref} --offset ${head!.length}\` or the cxagent_read_result tool, or pass the reference as a tool's argument …]`);
  expect(session.results.text(capped.spilled!.ref)).toBe(full);
  expect(session.results.info(capped.spilled!.ref)).toMatchObject({ plugin: "big-reply", tool: "big_reply", bytes: 300 * KB });
  // Under the cap: as it is.
  expect((await plugin.invoke("big_reply", { bytes: 50 * KB }, { maxOutputBytes: 100_000 })).spilled).toBeUndefined();
  expect((await refusal(plugin.invoke("big_reply", { bytes: 10 }, { maxOutputBytes: 10 }))).message).toBe("the delivery cap (maxOutputBytes) is 10; it must be a whole number of bytes, at least 1024, or 0 for none");
}, 60_000);

test("tool A's 300 KB result passed by reference to tool B arrives byte for byte; the prompt shows the reference's size and origin", async () => {
  using dir = tempDir();
  await using session = await openSession();
  const a = await session.load(fixture("big-reply"));
  const b = await session.load(hasher(dir.path));
  const result = await a.invoke("big_reply", { bytes: 300 * KB, tag: 5 }, { maxOutputBytes: 100_000 });
  const ref = result.spilled!.ref;
  const asked: PermissionRequest[] = [];
  const hashed = await within(b.invoke("hash_text", { text: ref }, { permission: (request) => (asked.push(request), "once") }), 30_000, "the call");
  expect(hashed.output).toEqual({ content: sha(letters(300 * KB, 5)), length: 300 * KB });
  expect(asked).toHaveLength(1);
  expect(asked[0]!.decision.display).toContain(`arguments.text is ${ref}: ${300 * KB} bytes from plugin 'big-reply', tool big_reply`);
  expect(asked[0]!.references).toMatchObject([{ at: "arguments.text", ref, bytes: 300 * KB, plugin: "big-reply", tool: "big_reply" }]);
  expect((asked[0]!.arguments as { text: string }).text.length).toBe(300 * KB); // the gate sees the real argument

  const unknown = await refusal(b.invoke("hash_text", { text: `cxref:sha256-${"0".repeat(64)}` }, { permission: "once" }));
  expect(unknown.code).toBe("E_NOT_FOUND");
  expect(unknown.message).toContain(`result cxref:sha256-${"0".repeat(64)} is not in `);
  // Another state folder cannot read it.
  using other = tempDir();
  await using elsewhere = await openSession({ stateDir: other.path });
  const b2 = await elsewhere.load(hasher(dir.path));
  expect((await refusal(b2.invoke("hash_text", { text: ref }, { permission: "once" }))).code).toBe("E_NOT_FOUND");
  // A string that merely starts like one is an ordinary argument (here too short for the schema).
  expect((await refusal(b.invoke("hash_text", { text: `${ref}x` }, { permission: "once" }))).code).toBe("E_INVALID_INPUT");
}, 60_000);
