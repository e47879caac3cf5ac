/**
 * The template files of `cxagent new`, imported as text so that the compiled binary carries
 * them: `cxagent new` needs nothing from the source tree where it runs. Placeholders are
 * `@@name@@`, `@@tool@@`, `@@crate@@`, `@@ident@@` and `@@code@@` (the file the sidecar pairs
 * with) — not `{{...}}`, which Rust's format strings use.
 */
import header from "../../ffi/cxagent_plugin.h" with { type: "text" };
import cMakefile from "./templates/c/Makefile.tmpl" with { type: "text" };
import cGitignore from "./templates/c/gitignore.tmpl" with { type: "text" };
import cPlugin from "./templates/c/plugin.c.tmpl" with { type: "text" };
import cReadme from "./templates/c/README.md.tmpl" with { type: "text" };
import pluginReadme from "./templates/common/plugin-README.md.tmpl" with { type: "text" };
import rustCargo from "./templates/rust/Cargo.toml.tmpl" with { type: "text" };
import rustGitignore from "./templates/rust/gitignore.tmpl" with { type: "text" };
import rustJson from "./templates/rust/json.rs.tmpl" with { type: "text" };
import rustLib from "./templates/rust/lib.rs.tmpl" with { type: "text" };
import rustMakefile from "./templates/rust/Makefile.tmpl" with { type: "text" };
import rustReadme from "./templates/rust/README.md.tmpl" with { type: "text" };
import tsTypes from "./templates/ts/cxagent.d.ts.tmpl" with { type: "text" };
import tsPlugin from "./templates/ts/plugin.ts.tmpl" with { type: "text" };
import tsReadme from "./templates/ts/README.md.tmpl" with { type: "text" };
import tsConfig from "./templates/ts/tsconfig.json.tmpl" with { type: "text" };

/** A file of a new project: its path in the project, with placeholders, and its template. */
export interface TemplateFile {
  path: string;
  template: string;
  /** Copied as it is, placeholders or not (the header, a module shared with an example). */
  verbatim?: boolean;
}

/** What every project has, whatever its language: the plugin's own README. */
const README: TemplateFile = { path: "plugin/README.md", template: pluginReadme };
/** What every native project has too: the ABI header. */
const COMMON: TemplateFile[] = [{ path: "cxagent_plugin.h", template: header, verbatim: true }, README];

export const TEMPLATES = {
  c: [
    { path: "@@name@@.c", template: cPlugin },
    { path: "Makefile", template: cMakefile },
    { path: ".gitignore", template: cGitignore },
    { path: "README.md", template: cReadme },
    ...COMMON,
  ],
  rust: [
    { path: "Cargo.toml", template: rustCargo },
    { path: "src/lib.rs", template: rustLib },
    { path: "src/json.rs", template: rustJson, verbatim: true },
    { path: "Makefile", template: rustMakefile },
    { path: ".gitignore", template: rustGitignore },
    { path: "README.md", template: rustReadme },
    ...COMMON,
  ],
  ts: [
    { path: "plugin/@@name@@.ts", template: tsPlugin },
    { path: "cxagent.d.ts", template: tsTypes, verbatim: true },
    { path: "tsconfig.json", template: tsConfig, verbatim: true },
    { path: "README.md", template: tsReadme },
    README,
  ],
} satisfies Record<string, TemplateFile[]>;

/** Fills in the placeholders; a placeholder without a value is a bug in the template. */
export function render(template: string, values: Record<string, string>): string {
  return template.replace(/@@([a-z]+)@@/g, (whole, key: string) => {
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    if (value === undefined) throw new Error(`template placeholder ${whole} has no value`);
    return value;
  });
}
