import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { existsSync, statSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { CxError } from "../../errors.ts";
import { hintCommand } from "../_hints.ts";
import { isLanguage, LANGUAGES, planProject, writeProject } from "../../scaffold/new-plugin.ts";
import { globalOptions } from "../_args.ts";
import type { CommandResult } from "../_output.ts";

const LANGUAGE_NAMES = { c: "C", rust: "Rust", ts: "TypeScript" } as const;
const choices = (words: string[]) => (words.length > 1 ? `${words.slice(0, -1).join(", ")} or ${words.at(-1)}` : words.join(""));

export default defineCommand({
  meta: commandMeta({ name: "new", description: "Start a plugin: a folder with its source, sidecar and READMEs (and a Makefile for C and Rust), ready to build", summary: "Start a new plugin in C, Rust or TypeScript, ready to build (or, TypeScript, to run)" }),
  args: {
    name: { type: "positional", description: "The plugin's name: 1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit", required: true },
    lang: { type: "string", description: `The plugin's language: ${choices(LANGUAGES)} (ts: a TypeScript module, nothing to build)`, valueHint: LANGUAGES.join("|") },
    dir: { type: "string", description: "The folder to create, which must not exist or be empty (default: ./<name>)", valueHint: "DIR" },
  },
  run({ args }): CommandResult {
    const options = globalOptions(args);
    if (typeof args.lang !== "string") {
      throw new CxError("E_USAGE", `'cxagent new' needs the plugin's language: ${choices(LANGUAGES.map((l) => `--lang ${l}`))}`, { hint: `see ${hintCommand("new --help")}` });
    }
    if (!isLanguage(args.lang)) {
      throw new CxError("E_USAGE", `cxagent new writes plugins in ${choices(LANGUAGES)}, not '${args.lang}'`, { hint: `see ${hintCommand("new --help")}` });
    }
    const cwd = resolve(options.cwd);
    if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
      throw new CxError("E_INVALID_INPUT", `the project folder ${cwd} does not exist or is not a folder`, { hint: "give --cwd an existing folder" });
    }
    const project = planProject(args.name, args.lang);
    const folder = resolve(cwd, typeof args.dir === "string" ? args.dir : project.names.name);
    writeProject(project, folder);

    // Paths as the person's shell sees them, whatever --cwd said.
    const here = process.cwd();
    const shown = (path: string) => shellWord(shortPath(here, path));
    const plugin = shown(join(folder, project.pluginFolder));
    const argsJson = JSON.stringify(project.example.args).replace(/:/g, ": ");
    const next = [
      ...(project.build ? [`${project.build.join(" ")} -C ${shown(folder)}`] : []),
      // As the user runs cxagent (npx cxagent, ./bin/cxagent, …), with this run's location flags.
      hintCommand(`check ${plugin}`),
      hintCommand(`approve ${plugin}`),
      hintCommand(`invoke ${plugin} ${project.example.tool} --args '${argsJson}'`),
    ];
    const language = LANGUAGE_NAMES[project.language];
    return {
      json: {
        name: project.names.name,
        language: project.language,
        folder,
        plugin: join(folder, project.pluginFolder),
        library: join(folder, project.library),
        sidecar: join(folder, project.sidecar),
        tools: [project.names.tool],
        files: project.files.map((f) => f.path),
        build: project.build && { command: project.build, cwd: folder },
        next,
      },
      text: [
        `created ${project.names.name}, a plugin in ${language}, in ${shortPath(here, folder)} (${project.files.length} files)`,
        "",
        project.build ? "build it, check it, approve it, call it:" : "check it, approve it, call it (there is nothing to build):",
        ...next.map((line) => `  ${line}`),
        "",
        `${shortPath(here, join(folder, "README.md"))} says what each file is for.`,
      ].join("\n"),
    };
  },
});

/** A path relative to the current folder when it lies inside it, else absolute. */
function shortPath(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}

/** Quotes a path for a shell command line when it needs it. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
