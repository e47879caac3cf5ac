/**
 * References as arguments (issue 41) under keys an attacker would choose: `__proto__`,
 * `constructor` and `prototype`, in nested objects and arrays. Each reference is still replaced
 * (and shown to the prompt), the keys stay the argument's own, and nothing reaches a prototype.
 */
import { afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { referenceLines, substituteRefs } from "../../src/results/refs.ts";
import { ResultStore } from "../../src/results/store.ts";
import { openSession, tempDir, within, writeModule } from "../helpers.ts";
import type { PermissionRequest } from "../../src/index.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const own = (o: unknown, k: string) => (o !== null && typeof o === "object" ? Object.getOwnPropertyDescriptor(o, k)?.value : undefined);
const polluted = () => [({} as Record<string, unknown>).polluted, ({} as Record<string, unknown>).text, ([] as unknown as Record<string, unknown>).x, Object.prototype.hasOwnProperty.call(Object.prototype, "polluted")];

afterEach(() => expect(polluted()).toEqual([undefined, undefined, undefined, false]));

/** Arguments as JSON.parse makes them from a model's text: `__proto__` an own key. */
const hostile = (ref: string) =>
  JSON.parse(
    JSON.stringify({ text: ref, list: [{ x: ref }, ref] })
      .replace(/^\{/, `{"__proto__":{"text":"${ref}","polluted":"yes"},"constructor":{"prototype":{"polluted":"${ref}"}},`)
      .replace(`{"x":`, `{"__proto__":{"x":"${ref}"},"x":`),
  ) as Record<string, unknown>;

test("references under __proto__, constructor and prototype keys, in objects and arrays, are replaced as the argument's own keys; no prototype changes", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const text = "stored text ".repeat(100);
  const { ref } = store.put(text, { plugin: "a", tool: "make" });
  const args = hostile(ref);
  expect(Object.keys(args)).toEqual(["__proto__", "constructor", "text", "list"]);
  const { args: out, references } = substituteRefs(args, store);
  const o = out as Record<string, unknown>;
  expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
  expect(Object.keys(o)).toEqual(["__proto__", "constructor", "text", "list"]);
  expect(o.text).toBe(text);
  expect(own(own(o, "__proto__"), "text")).toBe(text);
  expect(own(own(o, "__proto__"), "polluted")).toBe("yes");
  expect(own(own(own(o, "constructor"), "prototype"), "polluted")).toBe(text);
  const list = o.list as unknown[];
  expect(own(own(list[0], "__proto__"), "x")).toBe(text);
  expect(own(list[0], "x")).toBe(text);
  expect(list[1]).toBe(text);
  expect(Object.getPrototypeOf(list[0])).toBe(Object.prototype);
  expect(references.map((r) => r.at)).toEqual(["arguments.__proto__.text", "arguments.constructor.prototype.polluted", "arguments.text", "arguments.list[0].__proto__.x", "arguments.list[0].x", "arguments.list[1]"]);
  // The input is not changed in place.
  expect(own(own(args, "__proto__"), "text")).toBe(ref);
});

test("arguments without a reference come back as the same objects; a string that only starts like one is left as it is", () => {
  using dir = tempDir();
  const store = new ResultStore(dir.path);
  const { ref } = store.put("x".repeat(100), { plugin: "a", tool: "make" });
  const plain = { a: [1, { b: "cxref:sha256-abc" }, `${ref} `, `x${ref}`], c: { d: "cxref:sha256-" + "G".repeat(64) } };
  const { args, references } = substituteRefs(plain, store);
  expect(args).toBe(plain);
  expect((args as typeof plain).a).toBe(plain.a);
  expect(references).toEqual([]);
  // One replaced deep in an array: that array and its parents copied, the rest shared.
  const mixed = { keep: { k: 1 }, list: [{ k: 2 }, ref] };
  const out = substituteRefs(mixed, store).args as typeof mixed;
  expect(out).not.toBe(mixed);
  expect(out.keep).toBe(mixed.keep);
  expect(out.list[0]).toBe(mixed.list[0]);
  expect(out.list).toEqual([{ k: 2 }, "x".repeat(100)]);
  expect(mixed.list[1]).toBe(ref);
});

test("the prompt's lines: size, plugin and tool, or 'of unknown origin'; one line each", () => {
  const r = { ref: "cxref:sha256-" + "a".repeat(64), sha256: "a".repeat(64), bytes: 12, usedAt: 0 };
  expect(referenceLines([{ ...r, at: "arguments.x", plugin: "p", tool: "t" }, { ...r, at: "arguments.y", plugin: "p" }, { ...r, at: "arguments.z" }])).toBe(
    [`arguments.x is ${r.ref}: 12 bytes from plugin 'p', tool t`, `arguments.y is ${r.ref}: 12 bytes from plugin 'p', tool ?`, `arguments.z is ${r.ref}: 12 bytes of unknown origin`].join("\n"),
  );
});

test("through the library: a model's arguments with __proto__ and constructor keys reach the plugin with every reference replaced, and the parent's prototypes are untouched", async () => {
  using dir = tempDir();
  await using session = await openSession();
  const maker = await session.load(
    writeModule(dir.path, "maker", `export default { start() {}, stop() {}, invoke() { return { success: true, output: { content: "made ".repeat(400) } }; } };`, { tools: [{ name: "make" }] }),
  );
  const made = await maker.invoke("make", {}, { maxOutputBytes: 1024 });
  const ref = made.spilled!.ref;
  const text = "made ".repeat(400);
  const reader = await session.load(
    writeModule(
      dir.path,
      "reader",
      `import { createHash } from "node:crypto";
const own = (o, k) => (o !== null && typeof o === "object" ? Object.getOwnPropertyDescriptor(o, k)?.value : undefined);
const h = (t) => (typeof t === "string" ? createHash("sha256").update(t).digest("hex") : String(t));
export default {
  start() {},
  stop() {},
  invoke(tool, args) {
    return { success: true, output: { content: h(args.text), keys: Object.keys(args), proto: h(own(own(args, "__proto__"), "text")), ctor: h(own(own(own(args, "constructor"), "prototype"), "polluted")), nested: h(own(own(args.list[0], "__proto__"), "x")), polluted: ({}).polluted ?? null } };
  },
};`,
      { tools: [{ name: "read", gated: true, inputSchema: { type: "object", properties: { text: { type: "string", minLength: 1000 } }, required: ["text"] } }] },
    ),
  );
  const asked: PermissionRequest[] = [];
  const got = await within(reader.invoke("read", hostile(ref), { permission: (request) => (asked.push(request), "once") }), 30_000, "the call");
  expect(got.output).toEqual({ content: sha(text), keys: ["__proto__", "constructor", "text", "list"], proto: sha(text), ctor: sha(text), nested: sha(text), polluted: null });
  expect(asked[0]!.references!.map((r) => r.at)).toEqual(["arguments.__proto__.text", "arguments.constructor.prototype.polluted", "arguments.text", "arguments.list[0].__proto__.x", "arguments.list[0].x", "arguments.list[1]"]);
}, 60_000);
