/**
 * `cxagent new`: the files of a new plugin project, and writing them without overwriting
 * anything. A project keeps its source and build files at its root and the plugin as it ships
 * in plugin/, its load set: cxagent hashes every file there, so a build tree or .git inside it
 * would slow every load and ask the user again after every build or commit.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CxError } from "../errors.ts";
import { type PluginNames, pluginNames } from "./names.ts";
import { render, TEMPLATES, type TemplateFile } from "./templates.ts";

export const LANGUAGES = Object.keys(TEMPLATES) as Language[];
export type Language = keyof typeof TEMPLATES;

export function isLanguage(value: string): value is Language {
  return Object.hasOwn(TEMPLATES, value);
}

export interface ProjectFile {
  /** Relative to the project folder, '/' separators. */
  path: string;
  text: string;
}

export interface PluginProject {
  names: PluginNames;
  language: Language;
  files: ProjectFile[];
  /** The load set, relative to the project folder. */
  pluginFolder: string;
  /** The library the build writes (a module plugin's module), relative to the project folder. */
  library: string;
  sidecar: string;
  /** The one command that builds it, run in the project folder; null when there is nothing to build. */
  build: string[] | null;
  /** A call that works on the new plugin as it is. */
  example: { tool: string; args: Record<string, unknown> };
}

const PLUGIN_FOLDER = "plugin";

/** The contract the templates are written for; their handshake returns the same number. */
const TEMPLATE_CONTRACT = 4;

/** The sidecar: the one copy of the manifest, which C and Rust compile into the library. */
function manifestOf(names: PluginNames) {
  return {
    pluginContract: TEMPLATE_CONTRACT,
    name: names.name,
    version: "0.1.0",
    spawns: false,
    // What it may touch, enforced by the kernel (README, "What a plugin may do"): nothing but its own folder.
    sandbox: { fs: { read: [], write: [] }, net: "none" },
    tools: [
      {
        name: names.tool,
        description: 'Greets someone by name and returns the greeting, such as "Hello, Ada!". It reads and changes nothing.',
        inputSchema: {
          type: "object",
          properties: {
            name: { type: "string", minLength: 1, description: 'Who to greet, for example "Ada".' },
            times: { type: "integer", minimum: 1, maximum: 3, default: 1, description: "How many times to say it, from 1 to 3 (default 1)." },
          },
          required: ["name"],
        },
        gated: false,
      },
    ],
  };
}

/** Everything `cxagent new` would write, nothing written yet. Throws E_INVALID_INPUT for a bad name. */
export function planProject(name: string, language: Language): PluginProject {
  const names = pluginNames(name);
  const isModule = language === "ts";
  const code = `${names.name}${isModule ? ".ts" : ".so"}`;
  const values = { name: names.name, tool: names.tool, crate: names.crate, ident: names.ident, code };
  const sidecar = `${PLUGIN_FOLDER}/${names.name}.plugin.json`;
  const files: ProjectFile[] = TEMPLATES[language].map((file: TemplateFile) => ({
    path: render(file.path, values),
    text: file.verbatim ? file.template : render(file.template, values),
  }));
  files.push({ path: sidecar, text: `${JSON.stringify(manifestOf(names), null, 2)}\n` });
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    names,
    language,
    files,
    pluginFolder: PLUGIN_FOLDER,
    library: `${PLUGIN_FOLDER}/${code}`,
    sidecar,
    build: isModule ? null : ["make"],
    example: { tool: names.tool, args: { name: "Ada" } },
  };
}

/**
 * Writes the project into `folder`, which must not exist or be empty: nothing is overwritten.
 * If a write fails, what this call created is removed again.
 */
export function writeProject(project: PluginProject, folder: string): void {
  if (existsSync(folder)) {
    if (!statSync(folder).isDirectory()) {
      throw new CxError("E_INVALID_INPUT", `cannot create the plugin in ${folder}: a file of that name exists`, {
        hint: "choose another folder with --dir, or another name",
      });
    }
    const entries = readdirSync(folder);
    if (entries.length > 0) {
      throw new CxError("E_INVALID_INPUT", `cannot create the plugin in ${folder}: the folder is not empty (it holds ${entries.length} entr${entries.length === 1 ? "y" : "ies"})`, {
        hint: "cxagent new never overwrites anything: choose a new or empty folder with --dir",
        details: { folder },
      });
    }
  }
  const createdFolders: string[] = [];
  const createdFiles: string[] = [];
  const makeFolder = (path: string) => {
    const missing: string[] = [];
    for (let p = path; !existsSync(p); p = dirname(p)) missing.unshift(p);
    for (const p of missing) {
      mkdirSync(p);
      createdFolders.push(p);
    }
  };
  try {
    makeFolder(folder);
    for (const file of project.files) {
      const path = join(folder, file.path);
      makeFolder(dirname(path));
      writeFileSync(path, file.text, { flag: "wx" }); // fails rather than replace a file that appeared meanwhile
      createdFiles.push(path);
    }
  } catch (error) {
    for (const path of createdFiles.reverse()) unlinkSync(path);
    for (const path of createdFolders.reverse()) {
      try {
        rmdirSync(path);
      } catch {
        // not empty: something else was put there meanwhile, and it stays
      }
    }
    const code = (error as NodeJS.ErrnoException).code;
    throw new CxError("E_INVALID_INPUT", `cannot create the plugin in ${folder}: ${code === "EEXIST" ? "a file appeared there while it was being written" : (error as Error).message}`, {
      hint: "choose a folder you can write to with --dir",
      cause: error,
    });
  }
}
