/**
 * How the CLI decides calls that need permission (SPEC §9): ask on a terminal; without one, allow
 * only with --allow (the display goes to stderr so the log shows what was allowed), else deny.
 */
import type { PermissionHandler } from "../host/gate.ts";
import { type Choice, choose, isInteractive } from "./_prompt.ts";
import { inert } from "../inert.ts";
import { askedBecause } from "../host/tool-policy.ts";

/** The plugin's wording of a call, inert; its later lines indented so none can pass for our legend. */
export function shownDisplay(display: string | null): string {
  return (display ?? "").split(/\r?\n/).map(inert).join("\n    ");
}

export function cliPermission(allow: boolean): PermissionHandler | undefined {
  if (isInteractive()) return askOnTerminal;
  if (allow) {
    return ({ decision }) => {
      process.stderr.write(`allowed by --allow: ${shownDisplay(decision.display)}\n`);
      return "once";
    };
  }
  return undefined;
}

const askOnTerminal: PermissionHandler = async ({ decision }) => {
  const choices: Choice<"once" | "always" | "deny">[] = [
    { key: "o", label: "allow once", value: "once" },
    ...(decision.alwaysOffered ? [{ key: "a", label: "always", value: "always" as const }] : []),
    { key: "d", label: "deny", value: "deny" },
  ];
  const legend = decision.alwaysOffered
    ? `o = allow once, a = always allow ${decision.rule} in this project, d = deny`
    : "o = allow once, d = deny";
  const why = decision.forcedBy ? `this tool ${inert(askedBecause(decision.forcedBy))}\n` : "";
  process.stderr.write(`${shownDisplay(decision.display)}\n${why}${legend}\n`);
  return choose("Allow this call?", choices, "deny");
};
