/**
 * plugin-host/module-loader.ts by itself: the snapshot it writes (in this process: it is files
 * only) and the loader hook that serves a module plugin's approved bytes (in a Bun process of its
 * own per archive, test/fixtures/module-loader-run.ts, as the hook is for a whole process). The
 * plugin host around it, through a session, is test/integration/module-trust.test.ts; these are
 * the loader's checks one by one, fast enough to run against each of its generated mutants.
 */
import { describe, expect, test } from "bun:test";
import { chownSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { STRYKER, tempDir } from "../helpers.ts";
import { snapshotOf, writeSnapshot } from "../../src/plugin-host/module-loader.ts";

const DRIVER = join(import.meta.dir, "../fixtures/module-loader-run.ts");
const PROBE = `export const probe = (spec: string) => import(spec);\n`;
const FOLDER = "/plugins/p";
const APPROVED = "which is not among the files that were approved: a module plugin may import only the files of its own folder (the ones that were approved)";
const OUTSIDE = "which is outside its folder /plugins/p: a module plugin may import only the files of its own folder (the ones that were approved)";

type Answer = { ok: true; value: Record<string, unknown> } | { ok: false; refused: boolean; error: string };

const bytes = (text: string) => new TextEncoder().encode(text);
const archiveOf = (files: Record<string, string>, links: Record<string, string> = {}, entry = "p.ts") => ({
  folder: FOLDER,
  entry,
  files: new Map(Object.entries(files).map(([rel, text]) => [rel, bytes(text)])),
  links: new Map(Object.entries(links)),
});

/** An empty 0700 folder in `dir`, as the parent makes one for the snapshot. */
function emptyFolder(dir: string, name = "snap"): string {
  const path = join(dir, name);
  mkdirSync(path, { mode: 0o700 });
  return path;
}

/** The loader in a process of its own: `main.ts` (PROBE) is the entry; each step's answer. */
async function loaded(dir: string, files: Record<string, string>, steps: ({ import: string } | { write: [string, string] })[], more: { links?: Record<string, string>; outside?: string[] } = {}): Promise<Answer[]> {
  const snapshot = emptyFolder(dir);
  const spec = join(dir, "case.json");
  writeFileSync(spec, JSON.stringify({ dir: snapshot, folder: FOLDER, entry: "main.ts", files: { "main.ts": PROBE, ...files }, steps, ...more }));
  const child = Bun.spawn([process.execPath, "--no-install", DRIVER, spec], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, ...STRYKER } });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`the loader's process failed (exit ${code}): ${err}`);
  const answers = out.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Answer);
  expect(answers).toHaveLength(steps.length);
  return answers;
}

const valueOf = (answer: Answer | undefined) => {
  if (!answer?.ok) throw new Error(`the import failed: ${answer ? answer.error : "no answer"}`);
  return answer.value;
};
const refusalOf = (answer: Answer | undefined) => {
  if (!answer || answer.ok) throw new Error(`the import was not refused: ${JSON.stringify(answer)}`);
  return answer.error;
};

describe("the snapshot", () => {
  test("is written only into an empty folder of this user's that only it can open", () => {
    using dir = tempDir();
    const archive = archiveOf({ "p.ts": "export default 1;" });
    const refusedFor = (path: string) => expect(() => writeSnapshot(path, archive)).toThrow(`the snapshot folder ${path} is not an empty folder of this user's that only it can open`);
    const file = join(dir.path, "file");
    writeFileSync(file, "");
    refusedFor(file);
    const link = join(dir.path, "link");
    symlinkSync(emptyFolder(dir.path, "target"), link);
    refusedFor(link);
    for (const mode of [0o750, 0o705, 0o710, 0o701]) {
      const open = emptyFolder(dir.path, `mode-${mode.toString(8)}`);
      // (mkdir's mode passes the umask: set it exactly)
      Bun.spawnSync(["chmod", mode.toString(8), open]);
      refusedFor(open);
    }
    if (process.getuid?.() === 0) {
      const others = emptyFolder(dir.path, "others");
      chownSync(others, 4242, process.getgid!());
      refusedFor(others);
    }
    const full = emptyFolder(dir.path, "full");
    writeFileSync(join(full, "left"), "");
    refusedFor(full);
    // the same folder, empty: written
    expect(writeSnapshot(emptyFolder(dir.path, "good"), archive).root).toBe(join(dir.path, "good", "plugin"));
  });

  test("holds the approved files (0600, in 0700 folders), their links, and the fences beside them", () => {
    using dir = tempDir();
    const snapshot = emptyFolder(dir.path);
    const archive = archiveOf({ "p.ts": "export default 1;", "lib/deep/x.ts": "export const x = 1;", "empty.txt": "" }, { "alias.ts": "lib/deep/x.ts", "lib/up.ts": "../p.ts", "links/only/here.ts": "../../p.ts" });
    const written = writeSnapshot(snapshot, archive);
    const root = join(snapshot, "plugin");
    expect(written.root).toBe(root);
    expect(written.entry).toBe(join(root, "p.ts"));
    const mode = (path: string) => lstatSync(path).mode & 0o777;
    for (const rel of archive.files.keys()) {
      expect(readFileSync(join(root, rel), "utf8")).toBe(new TextDecoder().decode(archive.files.get(rel)));
      expect(mode(join(root, rel))).toBe(0o600);
    }
    for (const folder of [root, join(root, "lib"), join(root, "lib/deep"), join(root, "links"), join(root, "links/only")]) expect(mode(folder)).toBe(0o700);
    expect(readlinkSync(join(root, "links/only/here.ts"))).toBe("../../p.ts");
    expect(readlinkSync(join(root, "alias.ts"))).toBe("lib/deep/x.ts");
    expect(readlinkSync(join(root, "lib/up.ts"))).toBe("../p.ts");
    // what stops Bun's search for these above the snapshot, and "cxagent" (its API is served by the hook)
    expect(readFileSync(join(snapshot, "package.json"), "utf8")).toBe("{}\n");
    expect(readFileSync(join(snapshot, "tsconfig.json"), "utf8")).toBe("{}\n");
    expect(JSON.parse(readFileSync(join(snapshot, "node_modules/cxagent/package.json"), "utf8"))).toEqual({ name: "cxagent", type: "module", main: "index.js" });
    expect(readFileSync(join(snapshot, "node_modules/cxagent/index.js"), "utf8")).toStartWith("//");
    for (const fence of ["package.json", "tsconfig.json", "node_modules/cxagent/package.json", "node_modules/cxagent/index.js"]) expect(mode(join(snapshot, fence))).toBe(0o600);
    for (const folder of ["node_modules", "node_modules/cxagent"]) expect(mode(join(snapshot, folder))).toBe(0o700);
  });

  test.each(["../escape.ts", "sub/../../escape.ts", "..", ".", "/abs/escape.ts", "sub//x.ts", "./x.ts", "sub/.", "sub/", ""])("an archive path %p is refused before anything is written there, as a file, a link or the entry", (rel) => {
    using dir = tempDir();
    for (const archive of [archiveOf({ "p.ts": "1", [rel]: "1" }), archiveOf({ "p.ts": "1" }, { [rel]: "p.ts" }), archiveOf({ "p.ts": "1", [rel]: "1" }, {}, rel)]) {
      const snapshot = emptyFolder(dir.path, `snap-${Math.random()}`);
      expect(() => writeSnapshot(snapshot, archive)).toThrow(`the module archive names a path outside the plugin's folder: ${rel}`);
      expect(() => snapshotOf(snapshot, { ...archive, entry: rel })).toThrow(`the module archive names a path outside the plugin's folder: ${rel}`);
    }
    expect(Bun.spawnSync(["find", dir.path, "-name", "escape.ts"]).stdout.toString()).toBe("");
  });

  test("writes snapshot paths in messages as the plugin's folder: inside it, the folder itself, and a sibling", () => {
    const snap = snapshotOf("/run/s", archiveOf({ "p.ts": "1", "a/b.ts": "1" }, {}, "a/b.ts"));
    expect(snap.root).toBe("/run/s/plugin");
    expect(snap.entry).toBe("/run/s/plugin/a/b.ts");
    expect(snap.shown("at /run/s/plugin/a/b.ts and /run/s/plugin/c.ts")).toBe(`at ${FOLDER}/a/b.ts and ${FOLDER}/c.ts`);
    expect(snap.shown("in /run/s/plugin.")).toBe(`in ${FOLDER}.`);
    expect(snap.shown("/run/s/plugin-evil/x.ts")).toBe(`${FOLDER}-evil/x.ts`);
    expect(snap.shown("/run/s/other")).toBe("/run/s/other");
  });
});

describe("the loader hook", () => {
  test("serves each kind of file from the approved bytes, as its extension says", async () => {
    using dir = tempDir();
    const jsx = `/** @jsxRuntime classic */\n/** @jsx h */\nconst h = (tag, props, ...children) => ({ tag, children });\n`;
    const answers = await loaded(
      dir.path,
      {
        "a.ts": "export const a: number = 1;",
        "m.mts": "export const m: string = 'mts';",
        // (a type assertion: TypeScript, which the tsx loader reads as an element)
        "c.cts": "export const c: string = <string>'cts';",
        "x.tsx": `${jsx}export const x: object = <b>tsx</b>;`,
        "y.jsx": `${jsx}export const y = <i>jsx</i>;`,
        "j.js": "export const j = 'js';",
        "e.mjs": "export const e = 'mjs';",
        "data.json": '{"value":"json","list":[1]}',
        "conf.toml": 'name = "toml"',
        "note.txt": "plain text",
        "doc.md": "# doc",
        "pic.png": "PNG",
        "served.ts": "export const served = 'approved';",
        "UPPER.TS": "export const upper: number = 2;",
        "real.ts": "export const real = 'through the link';",
      },
      [
        ...["./a.ts", "./m.mts", "./c.cts", "./x.tsx", "./y.jsx", "./j.js", "./e.mjs", "./data.json", "./conf.toml", "./note.txt", "./doc.md", "./pic.png", "./UPPER.TS"].map((spec) => ({ import: spec })),
        // the snapshot's copy changed on disk: the hook serves the approved bytes, not it
        { write: ["served.ts", "export const served = 'changed on disk';"] },
        { import: "./served.ts" },
        { import: "./alias.ts" },
        { import: "cxagent" },
      ],
      { links: { "alias.ts": "real.ts" } },
    );
    const [a, m, c, x, y, j, e, json, toml, txt, md, png, upper, , served, alias, api] = answers.map((answer) => (answer.ok ? answer.value : answer.error));
    expect([a, m, c]).toEqual([{ a: 1 }, { m: "mts" }, { c: "cts" }]);
    expect(x).toEqual({ x: { tag: "b", children: ["tsx"] } });
    expect(y).toEqual({ y: { tag: "i", children: ["jsx"] } });
    expect([j, e]).toEqual([{ j: "js" }, { e: "mjs" }]);
    expect(json).toEqual({ default: { list: [1], value: "json" }, list: [1], "module.exports": { list: [1], value: "json" }, value: "json" });
    expect(toml).toEqual({ default: { name: "toml" }, "module.exports": { name: "toml" }, name: "toml" });
    expect([txt, md]).toEqual([{ default: "plain text" }, { default: "# doc" }]);
    expect(png).toEqual({ default: join(dir.path, "snap/plugin/pic.png") });
    expect(upper).toEqual({ upper: 2 });
    expect(served).toEqual({ served: "approved" });
    expect(alias).toEqual({ real: "through the link" });
    expect(api).toEqual({ LOG_LEVELS: expect.any(Object), default: { LOG_LEVELS: expect.any(Object), definePlugin: "function" }, definePlugin: "function" });
  });

  test("refuses a file of the snapshot that was not approved, one beside it and one outside it, naming each", async () => {
    using dir = tempDir();
    const outside = join(dir.path, "outside.ts");
    writeFileSync(outside, "export const outside = 1;");
    const answers = await loaded(
      dir.path,
      { "p.ts": "export const p = 1;" },
      [
        { write: ["late.ts", "export const late = 1;"] },
        { import: "./late.ts" },
        { write: ["../plugin-evil/x.ts", "export const evil = 1;"] },
        { import: "../plugin-evil/x.ts" },
        { import: outside },
        { import: "../package.json" },
      ],
    );
    expect(answers[1]).toMatchObject({ refused: true });
    expect(refusalOf(answers[1])).toBe(`the plugin imports ${FOLDER}/late.ts, ${APPROVED}, Bun's built-in modules and "cxagent"`);
    expect(refusalOf(answers[3])).toStartWith(`the plugin imports ${FOLDER}-evil/x.ts, ${OUTSIDE}`);
    expect(refusalOf(answers[4])).toStartWith(`the plugin imports ${outside}, ${OUTSIDE}`);
    expect(refusalOf(answers[5])).toStartWith(`the plugin imports ${join(dir.path, "snap", "package.json")}, ${OUTSIDE}`);
  });

  test("CommonJS: by .cjs, by the nearest package.json's type, else by what the file uses; each runs once, as Node would", async () => {
    using dir = tempDir();
    const outside = join(dir.path, "outside.js");
    writeFileSync(outside, "exports.outside = 1;");
    // text that looks like CommonJS in a file that is an ES module by its package's type, or by its exports or imports
    const looks = `const said = "module.exports";\nglobalThis.said = said;\n`;
    const answers = await loaded(
      dir.path,
      {
        "cjs/index.cjs": [
          `const first = require("./counted.js");`,
          `const second = require("./counted.js");`,
          `exports.counted = first.runs;`,
          `exports.same = first === second;`,
          `exports.keys = Object.keys(first).join(",");`,
          `exports.builtin = typeof require("node:path").join + typeof require("fs").readFileSync;`,
          `exports.self = this === module.exports;`,
          `exports.file = __filename;`,
          `exports.dir = __dirname;`,
          `exports.id = module.id === __filename && module.filename === __filename;`,
          `exports.during = module.loaded;`,
          `exports.state = { get loaded() { return module.loaded; } };`,
          `exports.resolved = require.resolve("./counted.js");`,
          `exports.main = require.main === undefined && typeof require.cache;`,
          `exports.fromTs = require("../a.ts").a;`,
        ].join("\n"),
        "cjs/counted.js": "globalThis.runs = (globalThis.runs ?? 0) + 1;\nmodule.exports = { runs: globalThis.runs };",
        "a.ts": "export const a: number = 1;",
        "r/exports-key.js": 'exports["key"] = 1;',
        "r/exports-dot.js": "exports.dot = 1;",
        "r/require.js": 'require ("./exports-dot.js");\nglobalThis.required = 1;',
        "r/require-tight.js": 'require("./exports-dot.js");\nglobalThis.required = 2;',
        "r/inside-a-word.js": "const mymodule = {};\nmymodule.exports = 1;\nglobalThis.mymodule = mymodule;",
        "r/dynamic.js": 'const later = () => import("./exports-dot.js");\nmodule.exports = { later: typeof later };',
        "r/plain.js": "globalThis.plain = 1;",
        "r/esm-export.js": `${looks}export const q = 1;`,
        "r/esm-import.js": `import "./exports-dot.js";\n${looks}`,
        "typed/package.json": '{"type":"module"}',
        "typed/deeper/looks.js": looks,
        "typed/common/package.json": '{"type":"commonjs"}',
        "typed/common/plain.js": "globalThis.plain2 = 1;",
        "bad/package.json": "{ not json",
        "bad/looks.js": looks,
        "num/package.json": '{"type":5}',
        "num/looks.js": looks,
        "mjs/looks.mjs": looks,
        "shape/es.cjs": 'module.exports = { __esModule: true, default: "chosen", other: 1 };',
        "shape/not-es.cjs": 'module.exports = { __esModule: "yes", default: "not chosen" };',
        "shape/array.cjs": "module.exports = [1, 2];",
        "shape/null.cjs": "module.exports = null;",
        "shape/text.cjs": 'module.exports = "text";',
        "late/needs.cjs": 'module.exports = require("./unapproved.cjs");',
        "late/outside.cjs": `module.exports = require(${JSON.stringify(outside)});`,
      },
      [
        { import: "./cjs/index.cjs" },
        { import: "./cjs/counted.js" },
        ...["exports-key", "exports-dot", "require", "dynamic", "plain", "esm-export", "esm-import", "require-tight", "inside-a-word"].map((name) => ({ import: `./r/${name}.js` })),
        { import: "./typed/deeper/looks.js" },
        { import: "./typed/common/plain.js" },
        { import: "./bad/looks.js" },
        { import: "./num/looks.js" },
        { import: "./mjs/looks.mjs" },
        ...["es", "not-es", "array", "null", "text"].map((name) => ({ import: `./shape/${name}.cjs` })),
        { write: ["late/unapproved.cjs", "module.exports = 1;"] },
        { import: "./late/needs.cjs" },
        { import: "./late/outside.cjs" },
      ],
    );
    const root = join(dir.path, "snap/plugin");
    const index = valueOf(answers[0]);
    expect(index.default).toEqual({
      builtin: "functionfunction",
      counted: 1,
      dir: join(root, "cjs"),
      during: false,
      file: join(root, "cjs/index.cjs"),
      fromTs: 1,
      id: true,
      keys: "runs",
      main: "object",
      resolved: join(root, "cjs/counted.js"),
      same: true,
      self: true,
      state: { loaded: true },
    });
    expect(index["module.exports"]).toEqual(index.default);
    expect(index.counted).toBe(1);
    // imported after it was required: the same run's exports
    expect(valueOf(answers[1])).toEqual({ default: { runs: 1 }, "module.exports": { runs: 1 }, runs: 1 });
    const [key, dot, require_, dynamic, plain, esmExport, esmImport, requireTight, insideAWord, typed, common, bad, num, mjs] = answers.slice(2, 16).map(valueOf);
    expect(key).toEqual({ default: { key: 1 }, key: 1, "module.exports": { key: 1 } });
    expect(dot).toEqual({ default: { dot: 1 }, dot: 1, "module.exports": { dot: 1 } });
    expect(require_).toEqual({ default: {}, "module.exports": {} });
    expect(dynamic).toEqual({ default: { later: "function" }, later: "function", "module.exports": { later: "function" } });
    // nothing says CommonJS: an ES module (no default export)
    expect(plain).toEqual({});
    expect(esmExport).toEqual({ q: 1 });
    expect(esmImport).toEqual({});
    expect(requireTight).toEqual({ default: {}, "module.exports": {} });
    // "module.exports" inside a longer name is not CommonJS
    expect(insideAWord).toEqual({});
    expect(typed).toEqual({});
    expect(common).toEqual({ default: {}, "module.exports": {} });
    // a package.json that cannot be read, or whose type is no string, says nothing: the file does
    expect(bad).toEqual({ default: {}, "module.exports": {} });
    expect(num).toEqual({ default: {}, "module.exports": {} });
    expect(mjs).toEqual({});
    const [es, notEs, array, none, text] = answers.slice(16, 21).map(valueOf);
    expect(es).toEqual({ __esModule: true, default: "chosen", "module.exports": { __esModule: true, default: "chosen", other: 1 }, other: 1 });
    expect(notEs).toEqual({ __esModule: "yes", default: { __esModule: "yes", default: "not chosen" }, "module.exports": { __esModule: "yes", default: "not chosen" } });
    expect(array).toEqual({ default: [1, 2], "module.exports": [1, 2] });
    expect(none).toEqual({ default: null, "module.exports": null });
    expect(text).toEqual({ default: "text", "module.exports": "text" });
    expect(refusalOf(answers[22])).toContain(`the plugin imports ${FOLDER}/late/unapproved.cjs, ${APPROVED}`);
    expect(refusalOf(answers[23])).toContain(`the plugin imports ${outside}, ${OUTSIDE}`);
  });

  test("a package.json's type is the nearest one's, from the plugin's folder down", async () => {
    using dir = tempDir();
    const looks = `const said = "module.exports";\nglobalThis.said = said;\n`;
    const answers = await loaded(
      dir.path,
      {
        "package.json": '{"type":"module"}',
        "top.js": looks,
        // a folder named as top.js's name less its last letter is not top.js's folder
        "top.j/package.json": '{"type":"commonjs"}',
        "a/b/c/looks.js": looks,
        "cjs/package.json": '{"type":"commonjs"}',
        "cjs/x/plain.js": "globalThis.plain = 1;",
        "cjs/x/y/plain.js": "globalThis.plain = 2;",
      },
      [{ import: "./top.js" }, { import: "./a/b/c/looks.js" }, { import: "./cjs/x/y/plain.js" }, { import: "./cjs/x/plain.js" }],
    );
    const cjs = { default: {}, "module.exports": {} };
    expect(answers.map(valueOf)).toEqual([{}, {}, cjs, cjs]);
  });

  test("in a Worker, a file under a folder the user listed is loaded from disk as it is, by its extension; nothing beside that folder", async () => {
    using dir = tempDir();
    const listed = join(dir.path, "listed");
    const beside = join(dir.path, "listed-evil");
    mkdirSync(listed);
    mkdirSync(beside);
    const jsx = `/** @jsxRuntime classic */\n/** @jsx h */\nconst h = (tag, props, ...children) => ({ tag, children });\n`;
    const files: Record<string, string> = {
      "o.ts": "export const o: number = <number>1;",
      "o.mts": "export const o: number = 2;",
      "o.cts": "export const o: number = 3;",
      "o.tsx": `${jsx}export const o: object = <b>tsx</b>;`,
      "o.jsx": `${jsx}export const o = <i>jsx</i>;`,
      "o.js": "export const o = 'js';",
      "o.mjs": "export const o = 'mjs';",
      "o.cjs": "export const o = 'cjs';",
      "o.json": '{"o":"json"}',
      "Up.TS": "export const o: number = 4;",
      "o.bin": "binary",
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(listed, name), text);
    writeFileSync(join(beside, "x.ts"), "export const x = 1;");
    const answers = await loaded(dir.path, {}, [...Object.keys(files).map((name) => ({ import: join(listed, name) })), { import: join(beside, "x.ts") }], { outside: [join(dir.path, "another"), listed] });
    const values = answers.slice(0, -1).map(valueOf);
    expect(values).toEqual([
      { o: 1 },
      { o: 2 },
      { o: 3 },
      { o: { tag: "b", children: ["tsx"] } },
      { o: { tag: "i", children: ["jsx"] } },
      { o: "js" },
      { o: "mjs" },
      { o: "cjs" },
      { default: { o: "json" }, "module.exports": { o: "json" }, o: "json" },
      { o: 4 },
      { default: join(listed, "o.bin") },
    ]);
    expect(refusalOf(answers.at(-1))).toStartWith(`the plugin imports ${join(beside, "x.ts")}, ${OUTSIDE}`);
  });
});
