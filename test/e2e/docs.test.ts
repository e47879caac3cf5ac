/**
 * Every shell line README.md and the example READMEs show works as shown, on a machine with
 * Node.js and a C compiler after `npm ci`: no `bun` on PATH, no npm variables around. The lines of
 * each README run in order, in a copy of this checkout (node_modules linked, the built libraries
 * copied). Each block starts from a config and a state folder of its own, empty: no example leans
 * on an approval or a grant an earlier block made (a reader may start at any block).
 *
 * The docs' own markers, the only exceptions:
 *  - a line whose comment says "on a terminal" needs one: it runs on a pseudo-terminal, and every
 *    y/N question it asks is answered y;
 *  - `npm ci && npm test` is what runs this test, so it is not run from inside it, and the `npm ci`
 *    before `npm run demo` is not repeated (this checkout is installed; a second `npm ci` would
 *    replace the node_modules the copy links to);
 *  - a cargo line, where cargo is not installed, is skipped, saying so;
 *  - `npm install -g ./cxagent-<version>.tgz` needs a release's tarball: test/e2e/install.test.ts
 *    packs one and installs it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { ROOT, tempDir } from "../helpers.ts";

/**
 * The shell lines of a Markdown file's sh/bash blocks, continuation lines joined, and a here-document
 * kept with the line that starts it (up to its terminator).
 */
export function shellLines(markdown: string): string[] {
  return shellBlocks(markdown).flat();
}

/** The shell lines of each sh/bash block, block by block (see shellLines). */
export function shellBlocks(markdown: string): string[][] {
  const blocks: string[][] = [];
  let lines: string[] = [];
  let inShell = false;
  let pending = "";
  let heredoc: { word: string; text: string } | null = null;
  for (const line of markdown.split("\n")) {
    if (heredoc) {
      heredoc.text += `\n${line}`;
      if (line.trim() === heredoc.word) {
        lines.push(heredoc.text);
        heredoc = null;
      }
      continue;
    }
    if (/^```/.test(line)) {
      if (inShell && lines.length) blocks.push(lines);
      lines = [];
      inShell = !inShell && /^```(sh|bash|shell)\s*$/.test(line);
      continue;
    }
    if (!inShell) continue;
    const starts = /<<-?\s*['"]?([A-Za-z_]\w*)['"]?/.exec(line);
    if (starts && !pending) {
      heredoc = { word: starts[1]!, text: line.trim() };
      continue;
    }
    const joined = pending + line;
    if (joined.endsWith("\\")) {
      pending = joined.slice(0, -1) + " ";
      continue;
    }
    pending = "";
    if (joined.trim() && !joined.trim().startsWith("#")) lines.push(joined.trim());
  }
  if (lines.length) blocks.push(lines);
  return blocks;
}

const READMES = ["README.md", ...readdirSync(join(ROOT, "examples")).filter((n) => existsSync(join(ROOT, "examples", n, "README.md"))).map((n) => `examples/${n}/README.md`)];

/** A copy of this checkout as `git` knows it, with its built libraries, node_modules linked. */
function checkout(into: string): string {
  const copy = join(into, "cxagent");
  const listed = Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: ROOT }).stdout.toString().split("\0").filter(Boolean);
  const built = [...new Bun.Glob("examples/**/*.so").scanSync({ cwd: ROOT }), ...new Bun.Glob("ffi/build/*").scanSync({ cwd: ROOT })];
  for (const file of [...listed, ...built]) {
    if (!existsSync(join(ROOT, file))) continue;
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(ROOT, file), join(copy, file), { verbatimSymlinks: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"));
  return copy;
}

/** The environment of a Node-only machine: PATH without Bun, no npm script variables, no colour. */
function nodeOnlyEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith("npm_") || k === "INIT_CWD" || k.startsWith("CXAGENT_") || k === "FORCE_COLOR") continue;
    env[k] = v;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(":")
    .filter((dir) => dir && !dir.includes("node_modules") && !existsSync(join(dir, "bun")))
    .join(":");
  return { ...env, NO_COLOR: "1", ...extra };
}

async function runLine(line: string, cwd: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  if (!line.includes("on a terminal")) {
    const proc = Bun.spawn(["bash", "-c", line], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, output: stdout + stderr };
  }
  let screen = "";
  let answered = 0;
  const decoder = new TextDecoder();
  let closed!: () => void;
  const eof = new Promise<void>((resolve) => (closed = resolve));
  const proc = Bun.spawn(["bash", "-c", line], {
    cwd,
    env,
    terminal: {
      cols: 200,
      rows: 50,
      data(terminal, data) {
        screen += decoder.decode(data, { stream: true });
        const asked = screen.split(/\[y\/(?:a\/)?N\]/).length - 1;
        if (asked > answered) {
          answered = asked;
          terminal.write("y");
        }
      },
      exit: () => closed(),
    },
  });
  const code = await proc.exited;
  await eof;
  proc.terminal?.close();
  return { code, output: screen };
}

describe("every shell line of the docs works as shown", () => {
  let dir: { path: string } & Disposable;
  let copy: string;
  const hasCargo = Bun.which("cargo") !== null;
  beforeAll(() => {
    dir = tempDir("cxagent-docs-");
    copy = checkout(dir.path);
  });
  afterAll(() => dir[Symbol.dispose]());

  READMES.forEach((readme, n) => {
    test(readme, async () => {
      const blocks = shellBlocks(readFileSync(join(ROOT, readme), "utf8"));
      expect(blocks.length).toBeGreaterThan(0);
      // Every line runs, and every failing one is reported at once (a block's later lines may fail because of it).
      const failed: unknown[] = [];
      for (const [b, lines] of blocks.entries()) {
        const env = nodeOnlyEnv({ CXAGENT_CONFIG_DIR: join(dir.path, `config-${n}-${b}`), CXAGENT_STATE_DIR: join(dir.path, `state-${n}-${b}`) });
        for (const shown of lines) {
          if (/^npm ci && npm test\b/.test(shown)) continue; // this test is part of npm test
          if (/^npm install -g \.\/cxagent-[\d.]+\.tgz\b/.test(shown)) continue; // install.test.ts
          if (/^cargo /.test(shown) && !hasCargo) {
            console.error(`docs: skipped in ${readme}, cargo is not installed: ${shown}`);
            continue;
          }
          if (/^cp target\//.test(shown) && !hasCargo) continue;
          const line = shown.replace(/^npm ci && /, "");
          // A line shown to fail says so in its comment: "# exit 3: …".
          const expected = Number(/#.*\bexit (\d+)\b/.exec(shown)?.[1] ?? 0);
          const r = await runLine(line, copy, env);
          if (r.code !== expected) failed.push({ block: b + 1, line: shown, code: r.code, expected, output: r.output });
        }
      }
      expect({ readme, failed }).toEqual({ readme, failed: [] });
      // README's lines build, approve, invoke and serve for real: over 300 s at a load average of 24
    }, 900_000);
  });
});
