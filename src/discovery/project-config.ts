/**
 * A project's own configuration, `<project>/.cxagent/config.json` (SPEC §6.2), where the project
 * is the session's working folder. It comes with the project's files — a clone, a download — so
 * it can only narrow what the user's config.json allows, never widen it. Per plugin it may:
 *
 *   - disable the plugin: `"enabled": false`;
 *   - hide tools: `"tools": {"deny": [pattern]}`;
 *   - make tools ask on every call: `"tools": {"ask": [pattern]}`;
 *   - lower a limit: `"invokeTimeoutMs"`, `"gateTimeoutMs"` (at most the user's value);
 *   - remove a secret's binding: `"secrets": {"github.token": false}` (adding one is refused);
 *   - narrow its kernel sandbox: `"sandbox": {...}` (issue 39), intersected with what the plugin
 *     declares and the user's config.json imposes; an entry that would widen it (a path outside,
 *     a wider network, a higher limit) refuses the plugin's load by its JSON path (sandbox-facts.ts).
 *
 * Everything else is refused by its JSON path, the whole file with it: `"enabled": true`,
 * `tools.allow`, `pluginPaths`, `settings`, `file`, `path`, a raised limit, any unknown key. It
 * never holds grants or approvals, and nothing is ever written to it.
 */
import { join } from "node:path";
import * as v from "valibot";
import { CxError } from "../errors.ts";
import { readSmallFile } from "../files.ts";
import { formatPath, type Problem, toProblems } from "../protocol/issues.ts";
import { describeProblems } from "../protocol/manifest.ts";
import { SandboxSchema } from "../protocol/sandbox.ts";
import { type Config, isPlainObject, MillisecondsSchema, type PluginConfig } from "./config.ts";
import { ToolPatternsSchema } from "./globs.ts";
import { ProjectSecretsSchema } from "./secret-bindings.ts";

/** Larger than any honest list of rules; a bigger file is refused, not read. */
const SIZE_CAP = 1 << 20;

const NARROWS = `a project can narrow what your own config.json allows, never widen it`;
const MAY_HOLD = `per plugin, "enabled": false, "tools": {"deny": [...], "ask": [...]}, a lower "invokeTimeoutMs" or "gateTimeoutMs", "secrets": {"<name>": false}, and a narrower "sandbox"`;

/** A key that would widen: present at all, it is refused with `why`. */
const widening = (why: string) => v.optional(v.custom<never>(() => false, why));

const ProjectPluginSchema = v.strictObject({
  enabled: v.optional(v.literal(false, "a project can disable a plugin (false), never enable one: whether it is enabled otherwise is your own config.json's to say")),
  tools: v.optional(
    v.strictObject({
      deny: v.optional(ToolPatternsSchema),
      ask: v.optional(ToolPatternsSchema),
      allow: widening("a project cannot allow tools, only deny them or make them ask: which tools are allowed is your own config.json's to say"),
    }),
  ),
  invokeTimeoutMs: v.optional(MillisecondsSchema),
  gateTimeoutMs: v.optional(MillisecondsSchema),
  file: widening("a project cannot say which file a plugin is: that is your own config.json's to say"),
  path: widening("a project cannot pin a plugin's folder: that is your own config.json's to say"),
  settings: widening("a project cannot supply a plugin's settings: they come only from your own config.json"),
  secrets: v.optional(ProjectSecretsSchema),
  sandbox: v.optional(SandboxSchema),
});
export type ProjectPluginConfig = v.InferOutput<typeof ProjectPluginSchema>;

const ProjectShapeSchema = v.strictObject({
  plugins: v.optional(v.custom<Record<string, unknown>>(isPlainObject, "must be an object of plugin entries")),
  pluginPaths: widening("a project cannot add folders to search for plugins: its own .cxagent/plugins is searched already"),
});

export interface ProjectConfig {
  /** The file, as the session found it. */
  path: string;
  plugins: ReadonlyMap<string, ProjectPluginConfig>;
}

export function projectConfigPath(projectDir: string): string {
  return join(projectDir, ".cxagent", "config.json");
}

/**
 * Reads and checks the project's config file against the user's: null when there is none. Throws
 * E_CONFIG naming every refused key by its path, all at once.
 */
export function readProjectConfig(projectDir: string, user: { config: Config; path: string; gateMs: number }): ProjectConfig | null {
  const path = projectConfigPath(projectDir);
  const text = readProjectFile(path);
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw refused(path, [{ path: "", message: `it is not valid JSON (${(error as Error).message})` }]);
  }
  return parseProjectConfig(raw, path, user);
}

export function parseProjectConfig(raw: unknown, path: string, user: { config: Config; path: string; gateMs: number }): ProjectConfig {
  const shape = v.safeParse(ProjectShapeSchema, raw);
  const problems: Problem[] = shape.success ? [] : projectProblems(shape.issues, []);
  const plugins = new Map<string, ProjectPluginConfig>();
  const entries = isPlainObject(raw) && isPlainObject(raw.plugins) ? raw.plugins : {};
  for (const name of Object.keys(entries)) {
    const prefix = [{ key: "plugins" }, { key: name }];
    const entry = v.safeParse(ProjectPluginSchema, entries[name]);
    if (!entry.success) problems.push(...projectProblems(entry.issues, prefix));
    problems.push(...raisedLimits(entries[name], prefix, user.config.plugins.get(name), user));
    if (entry.success) plugins.set(name, entry.output);
  }
  if (problems.length) throw refused(path, problems);
  return { path, plugins };
}

/** A limit the project sets higher than the user's own (or, for the gate, the default): it would widen. */
function raisedLimits(raw: unknown, prefix: { key: string }[], mine: PluginConfig | undefined, user: { path: string; gateMs: number }): Problem[] {
  if (!isPlainObject(raw)) return [];
  const problems: Problem[] = [];
  const at = (key: string) => formatPath([...prefix, { key }]);
  const given = (key: string) => (v.is(MillisecondsSchema, raw[key]) ? (raw[key] as number) : undefined);
  const invoke = given("invokeTimeoutMs");
  if (invoke !== undefined && mine?.invokeTimeoutMs !== undefined && invoke > mine.invokeTimeoutMs) {
    problems.push({
      path: at("invokeTimeoutMs"),
      message: `${at("invokeTimeoutMs")}: ${invoke} ms would raise the limit of ${mine.invokeTimeoutMs} ms your ${user.path} sets; a project can only lower it`,
    });
  }
  const gate = given("gateTimeoutMs");
  const ceiling = mine?.gateTimeoutMs ?? user.gateMs;
  if (gate !== undefined && gate > ceiling) {
    const whose = mine?.gateTimeoutMs !== undefined ? `your ${user.path} sets` : "is the default";
    problems.push({
      path: at("gateTimeoutMs"),
      message: `${at("gateTimeoutMs")}: ${gate} ms would give the gate longer than the ${ceiling} ms that ${whose}; a project can only shorten it`,
    });
  }
  return problems;
}

/** The schema's issues as problems, an unknown key named as one a project may not hold. */
function projectProblems(issues: readonly v.BaseIssue<unknown>[], prefix: { key: string }[]): Problem[] {
  return issues.map((issue) => {
    const full = [...prefix, ...(issue.path ?? [])] as unknown as NonNullable<v.BaseIssue<unknown>["path"]>;
    if (issue.type === "strict_object" && issue.expected === "never") {
      const at = formatPath(full);
      return { path: at, message: `${at}: a project's config.json cannot hold this key (it may hold, ${MAY_HOLD})` };
    }
    return toProblems([{ ...issue, path: full }], "the project's config file")[0]!;
  });
}

function refused(path: string, problems: Problem[]): CxError {
  return new CxError("E_CONFIG", `the project's config file ${path} was refused (${NARROWS}):\n${describeProblems(problems)}`, {
    hint: `fix or remove ${path}; it may hold, ${MAY_HOLD}`,
    details: { path, problems },
  });
}

/**
 * The file's text, or null when there is none. A project folder is not ours: a FIFO there must
 * not hang us, nor a huge file fill memory, so only a regular file of a sane size is read.
 */
function readProjectFile(path: string): string | null {
  const read = readSmallFile(path, SIZE_CAP);
  if ("text" in read) return read.text;
  if ("missing" in read) return null;
  const message =
    "unreadable" in read ? `it cannot be read (${read.unreadable})` : "notFile" in read ? "it is not a regular file" : `it is larger than the ${SIZE_CAP} bytes a config file may be`;
  throw refused(path, [{ path: "", message }]);
}
