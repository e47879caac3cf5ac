/**
 * Per-call permission in `cxagent mcp` (SPEC §7 through MCP). A call that needs a person is asked
 * through `elicitation/create` when the client can show a form; otherwise it is denied by policy,
 * unless a stored grant (checked by the library) or an `--allow-tool` rule allows it.
 *
 * RULE is `<plugin>/<tool>`, or the stored grant's own text `plugin <plugin> tool <tool>`; either
 * part may use `*` as a wildcard (`calculator/*`, or `*` for the plugin part). A rule allows a call once each
 * time it matches, for this server's lifetime; it never stores a grant.
 */
import { askedBecause, CxError, type PermissionAnswer, type PermissionHandler, type PermissionRequest } from "../index.ts";
import { visible } from "./tools.ts";

export interface AllowRule {
  text: string;
  matches(plugin: string, tool: string): boolean;
}

const PART = /^[A-Za-z0-9._*-]{1,64}$/;

function glob(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\-]/g, "\\$&").replace(/\*/g, ".*")}$`);
}

export function parseAllowRule(text: string): AllowRule {
  const trimmed = text.trim();
  const spelled = /^plugin\s+(\S+)\s+tool\s+(\S+)$/.exec(trimmed);
  const [plugin, tool] = spelled ? [spelled[1]!, spelled[2]!] : trimmed.split("/");
  if (!plugin || !tool || trimmed.split("/").length > 2 || !PART.test(plugin) || !PART.test(tool)) {
    throw new CxError("E_USAGE", `--allow-tool '${text}' is not a rule`, {
      hint: "write <plugin>/<tool> (e.g. calculator/calc_add, calculator/*) or 'plugin <plugin> tool <tool>'",
    });
  }
  const p = glob(plugin);
  const t = glob(tool);
  return { text: trimmed, matches: (pluginName, toolName) => p.test(pluginName) && t.test(toolName) };
}

export type ElicitAnswer = { action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> };

/** What `elicitation/create` asks: a one-field form, its choices depending on whether Always is offered. */
export function elicitation(request: PermissionRequest, project: string) {
  const { plugin, tool, decision } = request;
  const choices = decision.alwaysOffered ? ["allow_once", "allow_always", "deny"] : ["allow_once", "deny"];
  const names = decision.alwaysOffered
    ? ["Allow once", `Allow always (stores '${decision.rule}' for ${project})`, "Deny"]
    : ["Allow once", "Deny"];
  const lines = [
    `cxagent: plugin '${plugin}' wants to run its tool '${tool}'.`,
    visible(decision.display ?? `${plugin} wants to run ${tool}`),
    decision.forcedBy ? visible(`This tool ${askedBecause(decision.forcedBy)}.`) : "",
    decision.alwaysOffered ? "" : "Allow always is not offered for this call.",
  ].filter(Boolean);
  return {
    mode: "form" as const,
    message: lines.join("\n"),
    requestedSchema: {
      type: "object" as const,
      properties: {
        decision: { type: "string" as const, title: "Decision", description: `Run ${tool} of plugin ${plugin}?`, enum: choices, enumNames: names, default: "deny" },
      },
      required: ["decision"],
    },
  };
}

/** The answer to an elicitation, as a permission answer: anything but an accepted allow is a denial. */
export function answerOf(answer: ElicitAnswer, alwaysOffered: boolean): PermissionAnswer {
  if (answer.action !== "accept") return "deny";
  const decision = answer.content?.decision;
  if (decision === "allow_once") return "once";
  if (decision === "allow_always" && alwaysOffered) return "always";
  return "deny";
}

/**
 * How one call is decided: a matching --allow-tool rule allows it; a client with elicitation is
 * asked; otherwise undefined, which the library turns into a denial by policy.
 */
export function permissionFor(options: {
  plugin: string;
  tool: string;
  rules: readonly AllowRule[];
  canElicit: boolean;
  elicit: (params: ReturnType<typeof elicitation>) => Promise<ElicitAnswer>;
  project: string;
  note: (line: string) => void;
  signal: AbortSignal;
  /** Whether this client may store a grant (Allow always): only one that proved it is the user. */
  mayStore: boolean;
}): PermissionHandler | undefined {
  const rule = options.rules.find((r) => r.matches(options.plugin, options.tool));
  if (rule) {
    return ({ decision }) => {
      options.note(`allowed by --allow-tool ${rule.text}: ${visible(decision.display ?? options.tool)}`);
      return "once";
    };
  }
  if (!options.canElicit) return undefined;
  return async (asked) => {
    // Always is not offered to a client that could be anybody: its answer would store a grant
    // that answers the user's own later calls in this project.
    const request = options.mayStore || !asked.decision.alwaysOffered ? asked : { ...asked, decision: { ...asked.decision, alwaysOffered: false } };
    let answer: ElicitAnswer;
    try {
      answer = await options.elicit(elicitation(request, options.project));
    } catch (error) {
      if (options.signal.aborted) throw error; // the call was cancelled: nothing is answered
      options.note(`${options.plugin} ${options.tool}: asking the client failed (${error instanceof Error ? error.message : String(error)}), so the call is denied`);
      return "deny";
    }
    const decided = answerOf(answer, request.decision.alwaysOffered);
    options.note(`${options.plugin} ${options.tool}: the client answered ${answer.action}${answer.content?.decision === undefined ? "" : ` ${String(answer.content.decision)}`} → ${decided}`);
    return decided;
  };
}

/** Appended to a denial by policy, so the model (and the person reading) knows the way out. */
export function policyHint(plugin: string, tool: string): string {
  return `This MCP client cannot ask a person (it declared no elicitation capability). To allow it, restart the server with --allow-tool ${plugin}/${tool}, or store a grant for the server's project folder: cxagent grants --add 'plugin ${plugin} tool ${tool}' (run in that folder, or with --cwd).`;
}
