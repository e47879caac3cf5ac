/**
 * The checks that need no plugin code to run: the library file and what it needs, its exports,
 * and the sidecar (valid, its schemas, descriptions and names).
 */
import { readFileSync } from "node:fs";
import { OPTIONAL_EXPORTS, MANDATORY_EXPORTS } from "../../protocol/wire.ts";
import { BUILTIN_TOOLS } from "../../session/names.ts";
import { readDynamic } from "../../elf/elf.ts";
import { type ElfSymbol, STB_LOCAL, STT_FUNC, STT_GNU_IFUNC, STV_DEFAULT, STV_PROTECTED } from "../../elf/symbols.ts";
import { libraryBytes } from "../../trust/hash.ts";
import type { CheckContext } from "../context.ts";
import { fail, oneLine, pass, plural, skip, type Verdict, warn } from "../report.ts";
import { schemaProblems } from "../../json-schema/check.ts";
import { schemaMistakes, unknownKeywords } from "../schema-lints.ts";
import { editDistance } from "../../suggest.ts";

/** The library's bytes: the approved copy when the folder was read, else the file. */
export function libraryFile(ctx: CheckContext): Uint8Array {
  return (ctx.inspection && libraryBytes(ctx.inspection.loadSet)) ?? readFileSync(ctx.location.library);
}

export function checkLibrary(ctx: CheckContext): Verdict {
  let bytes: Uint8Array;
  try {
    bytes = libraryFile(ctx);
  } catch (error) {
    return fail(`${ctx.location.library} cannot be read: ${(error as Error).message}`, "make the library readable");
  }
  let needed: string[];
  try {
    needed = readDynamic(bytes).needed;
  } catch (error) {
    return fail(`${ctx.location.library} is not a library this host can load: ${(error as Error).message}`, "build it as a 64-bit shared object for this machine: cc -shared -fPIC (cargo: crate-type = [\"cdylib\"])");
  }
  const problem = ctx.inspection?.dependencies.problem;
  if (problem) return fail(oneLine(problem.message), problem.hint ?? "ship each library it needs in its folder, with a soname, found through $ORIGIN");
  const inSet = ctx.inspection?.dependencies.plan?.inSet.map((d) => d.path) ?? [];
  return pass(`a shared object needing ${needed.length ? needed.join(", ") : "no other library"}${inSet.length ? `; it ships ${inSet.join(", ")}` : ""}`);
}

const KNOWN_EXPORTS = new Set<string>([...MANDATORY_EXPORTS, ...OPTIONAL_EXPORTS.map((e) => `cxagent_plugin_${e}`)]);

const exported = (s: ElfSymbol) => s.defined && s.bind !== STB_LOCAL && (s.visibility === STV_DEFAULT || s.visibility === STV_PROTECTED);

export function checkExports(ctx: CheckContext): Verdict {
  if ("error" in ctx.symbols) return skip(`its symbols could not be read: ${ctx.symbols.error}`);
  const { dynamic, all } = ctx.symbols;
  const find = (name: string) => dynamic.find((s) => s.name === name && exported(s));
  const problems: string[] = [];
  for (const name of MANDATORY_EXPORTS) {
    const symbol = find(name);
    if (symbol && symbol.type !== STT_FUNC && symbol.type !== STT_GNU_IFUNC && symbol.type !== 0) {
      problems.push(`${name} is exported but is not a function`);
      continue;
    }
    if (symbol) continue;
    const inner = all?.find((s) => s.name === name && s.defined);
    // The linker turns a hidden global into a local symbol, as a static one is: the two look alike.
    if (inner) problems.push(`${name} is defined but not exported (it is static, or its visibility is hidden)`);
    else if (dynamic.some((s) => s.name === name && !s.defined)) problems.push(`${name} is not defined (the library only refers to it)`);
    else problems.push(`${name} is missing`);
  }
  const mangled = dynamic.filter((s) => exported(s) && /^_Z\d+cxagent_plugin_/.test(s.name)).map((s) => s.name);
  if (problems.length) {
    const n = problems.length;
    return fail(`${plural(n, "mandatory export")} ${n === 1 ? "is" : "are"} not usable: ${problems.join("; ")}${mangled.length ? `; C++ names were exported instead: ${mangled.join(", ")}` : ""}`,
      mangled.length
        ? "give each export exactly the header's signature (const char*, not char*) inside its extern \"C\" block, so its name is not mangled"
        : "define every mandatory export of ffi/cxagent_plugin.h in the file that includes the header, whose declarations carry CXAGENT_PLUGIN_EXPORT (default visibility, also under -fvisibility=hidden); Rust: #[unsafe(no_mangle)] pub extern \"C\" fn");
  }
  const optional = OPTIONAL_EXPORTS.filter((e) => find(`cxagent_plugin_${e}`));
  const absent = OPTIONAL_EXPORTS.filter((e) => !optional.includes(e));
  const stray = dynamic.filter((s) => exported(s) && s.name.startsWith("cxagent_plugin_") && !KNOWN_EXPORTS.has(s.name)).map((s) => s.name);
  const noted = `the ${MANDATORY_EXPORTS.length} mandatory exports are exported as functions; optional: ${optional.length ? `${optional.join(", ")} exported` : "none exported"}${absent.length && optional.length ? ` (${absent.join(", ")} not)` : ""}`;
  if (stray.length || mangled.length) {
    const near = (name: string) => [...KNOWN_EXPORTS].find((k) => closeTo(name, k));
    const words = [...stray.map((s) => `${s}${near(s) ? ` (did you mean ${near(s)}?)` : ""}`), ...mangled];
    return warn(`${noted}; ${plural(words.length, "other export")} named like the ABI's, which the host never calls: ${words.join(", ")}`, "rename it to the header's name, or remove it");
  }
  return pass(noted);
}

/** Within two edits, or one a prefix of the other. */
function closeTo(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a) || editDistance(a, b) <= 2;
}

export function checkSidecar(ctx: CheckContext): Verdict {
  if (ctx.sidecarError) return fail(oneLine(ctx.sidecarError.message), ctx.sidecarError.hint ?? "fix the sidecar; the manifest rules are in ffi/cxagent_plugin.h, at cxagent_plugin_describe");
  const m = ctx.sidecar!;
  const flags = [m.spawns ? "spawns processes" : null, m.client ? "a client" : null, m.instructions ? "adds instructions" : null].filter(Boolean);
  return pass(`${ctx.location.sidecar}: ${m.name} ${m.version}, contract ${m.pluginContract}, ${plural(m.tools.length, "tool")}, ${plural(m.commands.length, "command")}${flags.length ? `; ${flags.join(", ")}` : ""}`);
}

/** The sidecar's tools as written, read apart from the manifest rules (a bad inputSchema makes the whole sidecar refuse). */
function rawTools(ctx: CheckContext): { name: string; inputSchema: Record<string, unknown> | null }[] | null {
  // A manifest declared elsewhere than in a JSON sidecar (a Cortex process plugin's manifest.toml) was read already;
  // one declared only by running code (a Cortex native plugin's) is what its plugin host described.
  if (ctx.inspection?.profile.declaresTools) return ctx.inspection.manifest.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema }));
  if (ctx.described) return ctx.described.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema }));
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(ctx.location.sidecar, "utf8"));
  } catch {
    return null;
  }
  const tools = (parsed as { tools?: unknown })?.tools;
  if (!Array.isArray(tools)) return null;
  return tools.map((t, i) => {
    const tool = (t ?? {}) as Record<string, unknown>;
    const schema = tool.inputSchema;
    const isObject = schema !== null && typeof schema === "object" && !Array.isArray(schema);
    return { name: typeof tool.name === "string" ? tool.name : `tools[${i}]`, inputSchema: schema === undefined ? { type: "object" } : isObject ? (schema as Record<string, unknown>) : null };
  });
}

export function checkSchemas(ctx: CheckContext): Verdict {
  const tools = rawTools(ctx);
  if (!tools) return skip("the sidecar has no tools array to read (see sidecar)");
  const problems: string[] = [];
  const notes: string[] = [];
  for (const tool of tools) {
    const schema = tool.inputSchema;
    if (!schema) {
      problems.push(`tool '${tool.name}': its inputSchema is not an object`);
      continue;
    }
    for (const p of [...schemaProblems(schema), ...schemaMistakes(schema)]) problems.push(`tool '${tool.name}': ${p.message}`);
    if (schema.type !== undefined && schema.type !== "object") problems.push(`tool '${tool.name}': the schema's type is ${JSON.stringify(schema.type)}, but a tool's arguments are always one JSON object`);
    if (schema.type === undefined) notes.push(`tool '${tool.name}': the schema has no "type": "object", which model APIs and MCP clients expect`);
    for (const u of unknownKeywords(schema)) notes.push(`tool '${tool.name}': ${u.path} is not a JSON Schema keyword, so validators ignore it${u.near ? ` (did you mean ${u.near}?)` : ""}`);
  }
  if (problems.length) return fail(`${plural(problems.length, "problem")}: ${[...problems, ...notes].join("; ")}`, "make each inputSchema a valid JSON Schema (draft 2020-12, or draft-07 by its $schema) describing the arguments object");
  if (notes.length) return warn(notes.join("; "), "use only JSON Schema's keywords (annotations of your own can start with x-), and give every inputSchema \"type\": \"object\"");
  return pass(tools.length ? `${plural(tools.length, "inputSchema")}, each a valid JSON Schema of an object` : "no tools, no schemas");
}

/** The manifest a plugin declares: its sidecar's, or (a Cortex native plugin) what its running code described. */
function declaredOf(ctx: CheckContext) {
  return ctx.described ?? ctx.sidecar;
}

export function checkDescriptions(ctx: CheckContext): Verdict {
  const m = declaredOf(ctx);
  if (!m) return skip("the sidecar could not be read");
  const bare = m.tools.filter((t) => t.description.trim() === "").map((t) => t.name);
  if (bare.length) {
    return fail(`${plural(bare.length, "tool")} without a description: ${bare.join(", ")}; a model decides from the description whether to call a tool, and MCP clients reject an empty one`,
      "say in each tool's description what it does, what it needs and what it returns");
  }
  const n = m.tools.length;
  return pass(n ? `every tool (${n}) has a description` : "no tools");
}

/** Names any plugin might take: a tool with one of these is refused wherever another plugin loaded it first. */
const GENERIC = new Set((
  "search find get set list query run exec execute read write open close fetch lookup definition definitions references " +
  "reference info help status create delete remove update edit test build tool call invoke check format lint parse convert " +
  "translate summarize summary ask chat send save load upload download start stop ping echo hello greet calculate compute " +
  "add count show view print log index shell bash command http request web browse file files code data text docs doc"
).split(" "));

export function checkNames(ctx: CheckContext): Verdict {
  const m = declaredOf(ctx);
  if (!m) return skip("the sidecar could not be read");
  const builtin = m.tools.filter((t) => (BUILTIN_TOOLS as readonly string[]).includes(t.name)).map((t) => t.name);
  if (builtin.length) {
    return fail(`${builtin.map((n) => `'${n}'`).join(", ")} ${builtin.length === 1 ? "is a built-in tool's name" : "are built-in tools' names"}, so every load refuses the plugin`,
      `prefix each tool with something of the plugin's own, such as '${prefixOf(m.name)}_${builtin[0]}'`);
  }
  const generic = m.tools.filter((t) => GENERIC.has(t.name.toLowerCase())).map((t) => t.name);
  const bare = m.tools.filter((t) => !generic.includes(t.name) && !/[_-]/.test(t.name)).map((t) => t.name);
  if (generic.length || bare.length) {
    const parts = [
      ...(generic.length ? [`${generic.map((n) => `'${n}'`).join(", ")} ${generic.length === 1 ? "is a name" : "are names"} other plugins will claim too`] : []),
      ...(bare.length ? [`${bare.map((n) => `'${n}'`).join(", ")} ${bare.length === 1 ? "is one word" : "are single words"}, with no prefix of the plugin's own`] : []),
    ];
    return warn(`${parts.join("; ")}: a tool name is claimed session-wide, and the second plugin to claim one is refused`,
      `prefix the tools with the plugin's own name, such as '${prefixOf(m.name)}_${(generic[0] ?? bare[0])!}', so they do not collide and a glob ('${prefixOf(m.name)}_*') selects them`);
  }
  const n = m.tools.length;
  return pass(n ? `${n === 1 ? "the tool's name is" : `all ${n} tool names are`} specific: ${m.tools.map((t) => t.name).join(", ")}` : "no tools");
}

function prefixOf(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9_]/g, "_").replace(/^([0-9])/, "p$1");
}
